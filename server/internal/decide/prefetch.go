package decide

import (
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/resp"
)

// A pipelined batch of decisions is looked up faster when the store is
// told its keys first (shard.Map.Prefetch): their lookups' memory misses
// then overlap. When a batch has been read, Prefetch parses its first
// requests (resp.Conn.ParseAhead, which is their one parse) and hands the
// keys of the decision commands among them to the store, which hashes them
// once for both the prefetch and the decision (shard.Map.DecideHashed). A
// batch longer than that (a peer's forwarded requests, say) is prefetched
// again each time the requests parsed ahead have run (see PrefetchNext).

const (
	PrefetchMax = 16 // the most requests one batch parses ahead, and keys it prefetches
	minPrefetch = 60 // bytes of two small decision requests: a batch of one is not worth it
)

// batchKeys holds the hashes of the keys Prefetch found. hashed has
// bit i set if the request ahead[i] of the connection is a keyed decision
// whose key, its argument arg[i], hashes to hashes[i].
type batchKeys struct {
	hashes [PrefetchMax]uint64
	cmds   [PrefetchMax]*core.Command // the command each request ahead names, nil if not looked up (AheadCommand)
	at     [PrefetchMax]uint8         // the index in ahead of keys[j]
	arg    [PrefetchMax]uint8         // which argument of ahead[i] is its key
	hashed uint32
	left   int // commands to run before the batch's next requests are parsed ahead and prefetched
}

// Prefetch parses the first requests of what is left of the batch in
// rc's read buffer, and prefetches the keys of the decisions among them;
// c is the connection's decision state.
func (d *Decisions) Prefetch(c *Conn, rc *resp.Conn) {
	bk := &c.batch
	bk.hashed, bk.left = 0, 0
	if rc.Unread() < minPrefetch || rc.BatchEnd() {
		return
	}
	rc.ParseAhead(PrefetchMax)
	var keys [PrefetchMax][]byte // on the stack: the store keeps none of them
	var last [2]*core.Command
	n := 0
	for i := range rc.Ahead() {
		key, arg, cm := d.aheadKey(rc, i, &last)
		bk.cmds[i] = cm
		if arg > 0 {
			keys[n], bk.at[n], bk.arg[i] = key, uint8(i), uint8(arg)
			n++
		}
	}
	if n < 2 {
		return
	}
	d.store.Prefetch(keys[:n], bk.hashes[:n])
	for j := n - 1; j >= 0; j-- { // hashes[j] moves to its request's index, which is at least j
		i := bk.at[j]
		bk.hashes[i] = bk.hashes[j]
		bk.hashed |= 1 << i
	}
	bk.left = rc.Ahead()
}

// PrefetchNext counts a command run, and parses ahead and prefetches the
// next requests of the batch once those parsed ahead have all run.
func (d *Decisions) PrefetchNext(c *Conn, rc *resp.Conn) {
	if bk := &c.batch; bk.left > 0 {
		if bk.left--; bk.left == 0 {
			d.Prefetch(c, rc)
		}
	}
}

// AheadKey returns the key of the request ahead[i] and which argument it
// is, if its command's entry says to prefetch it (core.FlagPrefetch), or 0 for
// that argument. Of a command that wraps another for a peer (RL.HOP level
// resp command key ...), it looks at the command wrapped. last are the
// two commands earlier requests named last, tried before the table: a
// pipeline mostly repeats one command or alternates two, and comparing a
// name costs less than the lookup (as in core.Table.ResolveFor).
func (d *Decisions) AheadKey(rc *resp.Conn, i int, last *[2]*core.Command) ([]byte, int) {
	key, arg, _ := d.aheadKey(rc, i, last)
	return key, arg
}

// aheadKey is AheadKey, also returning the command the request names
// (the one that wraps, of a peer's), or nil if it did not look it up.
func (d *Decisions) aheadKey(rc *resp.Conn, i int, last *[2]*core.Command) ([]byte, int, *core.Command) {
	n := rc.AheadArgs(i)
	if n < 2 {
		return nil, 0, nil
	}
	named := d.aheadCommand(rc.AheadArg(i, 0), last)
	cm, base := named, 0
	if cm != nil && cm.Wraps > 0 && n > cm.Wraps+1 {
		base = cm.Wraps
		cm = d.aheadCommand(rc.AheadArg(i, base), last)
	}
	if cm == nil || cm.Flags&core.FlagPrefetch == 0 || base+cm.FirstKey >= n {
		return nil, 0, named
	}
	arg := base + cm.FirstKey
	return rc.AheadArg(i, arg), arg, named
}

// AheadCommand returns the command that the request of rc being run
// names, if Prefetch looked it up when it parsed the request ahead, else
// nil: the server hands it to the pipeline (core.Session.Ahead), so that
// a request's name is looked up once.
func (c *Conn) AheadCommand(rc *resp.Conn) *core.Command {
	if i, _ := rc.Current(); i >= 0 && i < len(c.batch.cmds) {
		return c.batch.cmds[i]
	}
	return nil
}

// aheadCommand is the command name calls, trying last and the command
// that wraps a peer's requests before the table, and remembers in last the
// last two commands it found that wrap none. Renamed commands are served
// only under their new names, so then every name goes to the table.
func (d *Decisions) aheadCommand(name []byte, last *[2]*core.Command) *core.Command {
	if !d.table.Renamed() {
		for _, cm := range last {
			if cm != nil && core.EqualFold(name, cm.Name) {
				return cm
			}
		}
		if cm := d.table.Hop(); cm != nil && core.EqualFold(name, cm.Name) {
			return cm
		}
	}
	cm := d.table.Find(name)
	if cm != nil && cm.Wraps == 0 {
		last[0], last[1] = cm, last[0]
	}
	return cm
}

// KeyHash returns the hash Prefetch found for key, if key is the very
// key argument of the connection's request being run that it hashed: the
// same bytes of the read buffer, so that the hash cannot belong to another
// key.
func (c *Conn) KeyHash(key []byte) (uint64, bool) {
	bk := &c.batch
	if c.rc == nil {
		return 0, false
	}
	i, args := c.rc.Current()
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
