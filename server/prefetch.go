package server

import (
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/resp"
)

// A pipelined batch of decisions is looked up faster when the store is
// told its keys first (shard.Map.Prefetch): their lookups' memory misses
// then overlap. When a batch has been read, prefetchBatch parses its first
// requests (resp.Conn.ParseAhead, which is their one parse) and hands the
// keys of the decision commands among them to the store, which hashes them
// once for both the prefetch and the decision (shard.Map.DecideHashed). A
// batch longer than that (a peer's forwarded requests, say) is prefetched
// again each time the requests parsed ahead have run (see prefetchNext).

const (
	prefetchMax = 16 // the most requests one batch parses ahead, and keys it prefetches
	minPrefetch = 60 // bytes of two small decision requests: a batch of one is not worth it
)

// batchKeys holds the hashes of the keys prefetchBatch found. hashed has
// bit i set if the request ahead[i] of the connection is a keyed decision
// whose key, its argument arg[i], hashes to hashes[i].
type batchKeys struct {
	hashes [prefetchMax]uint64
	at     [prefetchMax]uint8 // the index in ahead of keys[j]
	arg    [prefetchMax]uint8 // which argument of ahead[i] is its key
	hashed uint32
	left   int // commands to run before the batch's next requests are parsed ahead and prefetched
}

// prefetchBatch parses the first requests of what is left of the batch in
// c's read buffer, and prefetches the keys of the decisions among them.
func (s *Server) prefetchBatch(c *client) {
	rc, bk := c.rc, &c.batch
	bk.hashed, bk.left = 0, 0
	if rc.Unread() < minPrefetch || rc.BatchEnd() {
		return
	}
	rc.ParseAhead(prefetchMax)
	var keys [prefetchMax][]byte // on the stack: the store keeps none of them
	var last [2]*core.Command
	n := 0
	for i := range rc.Ahead() {
		if key, arg := s.aheadKey(rc, i, &last); arg > 0 {
			keys[n], bk.at[n], bk.arg[i] = key, uint8(i), uint8(arg)
			n++
		}
	}
	if n < 2 {
		return
	}
	s.cfg.Store.Prefetch(keys[:n], bk.hashes[:n])
	for j := n - 1; j >= 0; j-- { // hashes[j] moves to its request's index, which is at least j
		i := bk.at[j]
		bk.hashes[i] = bk.hashes[j]
		bk.hashed |= 1 << i
	}
	bk.left = rc.Ahead()
}

// prefetchNext counts a command run, and parses ahead and prefetches the
// next requests of the batch once those parsed ahead have all run.
func (s *Server) prefetchNext(c *client) {
	if bk := &c.batch; bk.left > 0 {
		if bk.left--; bk.left == 0 {
			s.prefetchBatch(c)
		}
	}
}

// aheadKey returns the key of the request ahead[i] and which argument it
// is, if its command's entry says to prefetch it (flagPrefetch), or 0 for
// that argument. Of a command that wraps another for a peer (RL.HOP level
// resp command key ...), it looks at the command wrapped. last are the
// two commands earlier requests named last, tried before the table: a
// pipeline mostly repeats one command or alternates two, and comparing a
// name costs less than the lookup (as in core.Table.ResolveFor).
func (s *Server) aheadKey(rc *resp.Conn, i int, last *[2]*core.Command) ([]byte, int) {
	n := rc.AheadArgs(i)
	if n < 2 {
		return nil, 0
	}
	cm, base := s.aheadCommand(rc.AheadArg(i, 0), last), 0
	if cm != nil && cm.Wraps > 0 && n > cm.Wraps+1 {
		base = cm.Wraps
		cm = s.aheadCommand(rc.AheadArg(i, base), last)
	}
	if cm == nil || cm.Flags&flagPrefetch == 0 || base+cm.FirstKey >= n {
		return nil, 0
	}
	arg := base + cm.FirstKey
	return rc.AheadArg(i, arg), arg
}

// aheadCommand is the command name calls, trying last and the command
// that wraps a peer's requests before the table, and remembers in last the
// last two commands it found that wrap none. Renamed commands are served
// only under their new names, so then every name goes to the table.
func (s *Server) aheadCommand(name []byte, last *[2]*core.Command) *core.Command {
	if !s.table.Renamed() {
		for _, cm := range last {
			if cm != nil && equalFoldASCII(name, cm.Name) {
				return cm
			}
		}
		if cm := s.table.Hop(); cm != nil && equalFoldASCII(name, cm.Name) {
			return cm
		}
	}
	cm := s.table.Find(name)
	if cm != nil && cm.Wraps == 0 {
		last[0], last[1] = cm, last[0]
	}
	return cm
}

// keyHash returns the hash prefetchBatch found for key, if key is the very
// key argument of the request being run that it hashed: the same bytes of
// the read buffer, so that the hash cannot belong to another key.
func (c *client) keyHash(key []byte) (uint64, bool) {
	rc, bk := c.rc, &c.batch
	i, args := rc.Current()
	if i < 0 || bk.hashed&(1<<i) == 0 || len(key) == 0 {
		return 0, false
	}
	arg := int(bk.arg[i])
	if arg >= len(args) {
		return 0, false
	}
	if k := args[arg]; len(k) != len(key) || &k[0] != &key[0] {
		return 0, false
	}
	return bk.hashes[i], true
}
