package keyspace

import (
	"math"
	"strconv"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/glob"
)

// errArgCursor is Redis's reply to a SCAN cursor that is not a number.
const errArgCursor policy.Error = "ERR invalid cursor"

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

// scanBatch bounds the slots one call into the store visits, so that neither
// KEYS nor a SCAN with a huge COUNT holds a shard lock for long.
const scanBatch = 1024

// scan visits about count slots from cursor, a batch at a time, keeping the
// keys f picks. It returns 0 once the whole store has been visited.
func (k *Keyspace) scan(keys [][]byte, cursor uint64, count int, f keyFilter) ([][]byte, uint64) {
	for count > 0 {
		n, from := min(count, scanBatch), len(keys)
		keys, cursor = k.cfg.Store.Scan(keys, cursor, n)
		keys, count = k.filterKeys(keys, from, f), count-n
		if cursor == 0 {
			break
		}
	}
	return keys, cursor
}

func (k *Keyspace) keys(x *core.Session, args [][]byte) {
	keys, _ := k.scan(nil, 0, math.MaxInt, keyFilter{pattern: args[1], now: k.cfg.Now()})
	writeKeys(x, keys)
}

// cmdScan replies [cursor, [keys]], the cursor as a bulk string like Redis's.
func (k *Keyspace) scanCmd(x *core.Session, args [][]byte) {
	a, err := parseScan(args)
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	a.filter.now = k.cfg.Now()
	keys, next := k.scan(nil, a.cursor, a.count, a.filter)
	x.Out.WriteArray(2)
	x.Out.WriteBulk(strconv.AppendUint(nil, next, 10))
	writeKeys(x, keys)
}

func writeKeys(x *core.Session, keys [][]byte) {
	x.Out.WriteArray(len(keys))
	for _, key := range keys {
		x.Out.WriteBulk(key)
	}
}

// filterKeys keeps, of keys[from:], those that f picks and that are live at f.now.
func (k *Keyspace) filterKeys(keys [][]byte, from int, f keyFilter) [][]byte {
	out := keys[:from]
	for _, key := range keys[from:] {
		if f.pattern != nil && !glob.Match(f.pattern, key) {
			continue
		}
		kind, _, live := k.lookup(key, f.now)
		if live && (f.kind == nil || core.EqualFold(f.kind, kind.String())) {
			out = append(out, key)
		}
	}
	return out
}

// parseScan parses SCAN's arguments. Options may repeat; the last one wins, as in Redis.
func parseScan(args [][]byte) (scanArgs, error) {
	a := scanArgs{count: 10}
	u, err := strconv.ParseUint(string(args[1]), 10, 64) // any uint64, as Redis takes; the store makes none above shard.MaxCursor
	if err != nil {
		return a, errArgCursor
	}
	a.cursor = u
	for i := 2; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, policy.ErrSyntax
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
	case core.EqualFold(name, "match"):
		a.filter.pattern = val
	case core.EqualFold(name, "type"):
		a.filter.kind = val
	case core.EqualFold(name, "count"):
		n, ok := policy.ParseInt(val)
		if !ok {
			return policy.ErrNotInt
		}
		if n < 1 {
			return policy.ErrSyntax
		}
		a.count = int(n)
	default:
		return policy.ErrSyntax
	}
	return nil
}
