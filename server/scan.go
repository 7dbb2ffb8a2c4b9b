package server

import (
	"strconv"
)

// errArgCursor is Redis's reply to a SCAN cursor that is not a number.
const errArgCursor argError = "ERR invalid cursor"

// keyFilter picks which keys SCAN and KEYS return.
type keyFilter struct {
	pattern []byte // nil: every key
	kind    []byte // nil: every type; else the name TYPE replies with
	now     int64
}

// scanArgs is a parsed SCAN cursor [MATCH pattern] [COUNT n] [TYPE t].
type scanArgs struct {
	cursor uint64
	count  int
	filter keyFilter
}

// keysBatch is how many slots KEYS visits per call into the store, so that it
// never holds a shard lock for long.
const keysBatch = 1024

func cmdKeys(s *Server, c *client, args [][]byte) {
	f := keyFilter{pattern: args[1], now: s.now()}
	var keys [][]byte
	for cursor := uint64(0); ; {
		n := len(keys)
		keys, cursor = s.cfg.Store.Scan(keys, cursor, keysBatch)
		keys = s.filterKeys(keys, n, f)
		if cursor == 0 {
			break
		}
	}
	writeKeys(c, keys)
}

// cmdScan replies [cursor, [keys]], the cursor as a bulk string like Redis's.
func cmdScan(s *Server, c *client, args [][]byte) {
	a, err := parseScan(args)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	a.filter.now = s.now()
	keys, next := s.cfg.Store.Scan(nil, a.cursor, a.count)
	keys = s.filterKeys(keys, 0, a.filter)
	c.conn.WriteArray(2)
	c.conn.WriteBulk(strconv.AppendUint(nil, next, 10))
	writeKeys(c, keys)
}

func writeKeys(c *client, keys [][]byte) {
	c.conn.WriteArray(len(keys))
	for _, k := range keys {
		c.conn.WriteBulk(k)
	}
}

// filterKeys keeps, of keys[from:], those that f picks and that are live at f.now.
func (s *Server) filterKeys(keys [][]byte, from int, f keyFilter) [][]byte {
	out := keys[:from]
	for _, k := range keys[from:] {
		if f.pattern != nil && !globMatch(f.pattern, k) {
			continue
		}
		kind, _, live := s.lookup(k, f.now)
		if live && (f.kind == nil || equalFold(f.kind, kind.String())) {
			out = append(out, k)
		}
	}
	return out
}

// parseScan parses SCAN's arguments. Options may repeat; the last one wins, as in Redis.
func parseScan(args [][]byte) (scanArgs, error) {
	a := scanArgs{count: 10}
	u, ok := parseDigits(args[1])
	if !ok {
		return a, errArgCursor
	}
	a.cursor = u
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, errArgSyntax
		}
		if err := a.option(args[i], args[i+1]); err != nil {
			return a, err
		}
	}
	return a, nil
}

// option applies one SCAN option and its value.
func (a *scanArgs) option(name, val []byte) error {
	switch {
	case equalFold(name, "match"):
		a.filter.pattern = val
	case equalFold(name, "type"):
		a.filter.kind = val
	case equalFold(name, "count"):
		n, ok := parseInt(val)
		if !ok {
			return errArgNotInt
		}
		if n < 1 {
			return errArgSyntax
		}
		a.count = int(min(n, 1<<20)) // bounds the work of one call, whatever the client asks
	default:
		return errArgSyntax
	}
	return nil
}
