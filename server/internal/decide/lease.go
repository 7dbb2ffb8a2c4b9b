package decide

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The lease commands' argument errors (docs/commands.md, Leases).
const (
	errArgLeaseLimit policy.Error = "ERR limit must be between 1 and 1048575"
	errArgLeaseCost  policy.Error = "ERR cost must be between 1 and 1048575"
	errArgLeaseTTL   policy.Error = "ERR ttl is not a duration or out of range"
	errArgLeaseTTLIn policy.Error = "ERR ttl must be between 1ms and 1d"
	errArgLeaseID    policy.Error = "ERR the lease id must be 1 to 256 bytes"
)

// maxLeaseID bounds a lease id's bytes: ids are kept as a hash, so this
// only keeps replies and the log's copies of commands small.
const maxLeaseID = 256

// LeaseCommands are the concurrency-limit commands (docs/commands.md,
// Leases). Each is one read-modify-write of the key's leases in the store.
func (d *Decisions) LeaseCommands() []core.Command {
	return []core.Command{
		{Name: nameAcquire, Arity: -4, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.acquire, Changes: changesKey, Group: "rl",
			Summary: "Takes a lease of cost units under a concurrency limit: replies allowed, id, limit, in_flight, wait_ms, reset_ms"},
		{Name: nameRenew, Arity: 4, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.renew, Changes: changesKey, Group: "rl",
			Summary: "Extends a live lease to ttl from now: 1, or 0 if it had ended"},
		{Name: nameRelease, Arity: 3, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.release, Changes: changesKey, Group: "rl",
			Summary: "Ends a lease: 1 if it was live, 0 if it had expired, was released or never existed"},
	}
}

// changesKey is the key of a command whose only key is its first argument.
func changesKey(args [][]byte) ([][]byte, []byte) { return args[1:2], nil }

// acquireArgs is one parsed RL.ACQUIRE key limit ttl [ID id] [COST n].
type acquireArgs struct {
	req shard.LeaseRequest
	id  []byte // nil: the server makes one
}

func parseAcquire(args [][]byte) (acquireArgs, error) {
	a := acquireArgs{req: shard.LeaseRequest{Op: shard.LeaseAcquire, Cost: 1}}
	limit, ok := policy.ParseInt(args[2])
	switch {
	case !ok:
		return a, errNotInt
	case limit < 1 || limit > window.MaxLeaseCost:
		return a, errArgLeaseLimit
	}
	a.req.Limit = limit
	var err error
	if a.req.TTL, err = parseLeaseTTL(args[3]); err != nil {
		return a, err
	}
	for i := 4; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return a, errSyntax
		}
		switch v := args[i+1]; {
		case isWord(args[i], "id"):
			if len(v) < 1 || len(v) > maxLeaseID {
				return a, errArgLeaseID
			}
			a.id = v
		case isWord(args[i], "cost"):
			if a.req.Cost, ok = policy.ParseInt(v); !ok {
				return a, errNotInt
			}
		default:
			return a, errSyntax
		}
	}
	if a.req.Cost < 1 || a.req.Cost > window.MaxLeaseCost {
		return a, errArgLeaseCost
	}
	return a, nil
}

// isWord reports whether b is word, a lower-case ASCII letters-only
// option name, in any case: a byte or'ed with 0x20 is such a letter only if
// it was that letter in either case. It is inlined where core.EqualFold is
// a call, which cost the lease and reservation commands' few short option
// names about 30 instructions each.
func isWord(b []byte, word string) bool {
	if len(b) != len(word) {
		return false
	}
	for i := range b {
		if b[i]|0x20 != word[i] {
			return false
		}
	}
	return true
}

func parseLeaseTTL(b []byte) (time.Duration, error) {
	d, ok := policy.ParseDuration(b)
	switch {
	case !ok:
		return 0, errArgLeaseTTL
	case d < time.Millisecond || d > window.MaxLeaseTTL:
		return 0, errArgLeaseTTLIn
	}
	return d, nil
}

func parseLeaseID(b []byte) ([]byte, error) {
	if len(b) < 1 || len(b) > maxLeaseID {
		return nil, errArgLeaseID
	}
	return b, nil
}

// newLeaseID makes an id for a lease its client did not name: 96 random
// bits in hex, so that ids from any node, before or after a restart, do
// not meet. The runtime's generator (ChaCha8, seeded per process) is
// unpredictable enough for ids that are no secret, and allocates nothing.
func newLeaseID(buf *[24]byte) []byte {
	var raw [12]byte
	binary.LittleEndian.PutUint64(raw[:8], rand.Uint64())
	binary.LittleEndian.PutUint32(raw[8:], rand.Uint32())
	hex.Encode(buf[:], raw[:])
	return buf[:]
}

func (d *Decisions) acquire(x *core.Session, args [][]byte) {
	if d.front.RefusedGlobal(x, args[1], "RL.ACQUIRE") { // a region's global key (decide.Front)
		return
	}
	a, err := parseAcquire(args)
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	var idBuf [24]byte
	if a.id == nil {
		a.id = newLeaseID(&idBuf)
	}
	a.req.ID = window.LeaseID(a.id)
	res, ok := d.lease(x, args[1], &a.req)
	if !ok {
		return
	}
	x.Scratch = appendAcquire(x.Scratch[:0], res, a.id)
	x.Out.WriteRaw(x.Scratch)
}

// appendAcquire appends RL.ACQUIRE's reply: allowed, id, limit, in_flight,
// wait_ms (-1: never), reset_ms.
func appendAcquire(b []byte, r shard.LeaseResult, id []byte) []byte {
	allowed, wait := int64(0), int64(0)
	if r.Allowed {
		allowed = 1
	} else {
		wait = WaitMs(r.Wait)
	}
	return AppendWithID(b, allowed, id, [4]int64{r.Limit, r.InFlight, wait, CeilMs(r.Reset)})
}

func (d *Decisions) renew(x *core.Session, args [][]byte) {
	id, err := parseLeaseID(args[2])
	if err == nil {
		var ttl time.Duration
		if ttl, err = parseLeaseTTL(args[3]); err == nil {
			d.leaseBool(x, args[1], &shard.LeaseRequest{Op: shard.LeaseRenew, ID: window.LeaseID(id), TTL: ttl})
			return
		}
	}
	x.Out.WriteError(err.Error())
}

func (d *Decisions) release(x *core.Session, args [][]byte) {
	id, err := parseLeaseID(args[2])
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	d.leaseBool(x, args[1], &shard.LeaseRequest{Op: shard.LeaseRelease, ID: window.LeaseID(id)})
}

// leaseBool runs a renew or release and replies 1 if the lease was live.
func (d *Decisions) leaseBool(x *core.Session, key []byte, r *shard.LeaseRequest) {
	res, ok := d.lease(x, key, r)
	if !ok {
		return
	}
	if res.Allowed {
		x.Out.WriteInt(1)
	} else {
		x.Out.WriteInt(0)
	}
}

// lease applies r to key's leases at the command's time, telling clients
// that track the key once it changed. On an error it replies and returns false.
func (d *Decisions) lease(x *core.Session, key []byte, r *shard.LeaseRequest) (shard.LeaseResult, bool) {
	if policy.Reserved(key) {
		x.Out.WriteError(string(ErrReserved))
		return shard.LeaseResult{}, false
	}
	res, err := d.store.Lease(key, *r, d.front.Now(x))
	if err != nil {
		x.Out.WriteError(leaseError(err))
		return res, false
	}
	if (res.Allowed || r.Op != shard.LeaseAcquire) && d.watch.Load() != 0 {
		d.front.Changed(x, key)
	}
	d.count(x, leaseSlot[r.Op], res.Allowed)
	return res, true
}

// leaseError words a store error; the arguments were checked already.
func leaseError(err error) string {
	if errors.Is(err, window.ErrCost) {
		return string(errArgLeaseCost)
	}
	return Reply(err)
}
