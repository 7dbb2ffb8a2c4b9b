package decide

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The reservation commands' argument errors (docs/commands.md, Reservations).
const (
	errArgReserveRule   policy.Error = "ERR the rule must be SLIDE, FIXED or TOKEN"
	errArgReserveTTL    policy.Error = "ERR RL.RESERVE needs TTL ttl"
	errArgReserveActual policy.Error = "ERR actual must be at least 0"
)

// ReserveCommands are the commands of budgets whose cost is known only
// afterwards (docs/commands.md, Reservations).
func (d *Decisions) ReserveCommands() []core.Command {
	return []core.Command{
		{Name: nameReserve, Arity: -5, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.reserveCmd, Changes: d.changesReserve, Group: "rl",
			Summary: "Charges an estimate now, to be replaced by the actual cost: replies allowed, id, limit, remaining, wait_ms, reset_ms"},
		{Name: nameCommit, Arity: -5, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.commit, Changes: d.changesReserve, Group: "rl",
			Summary: "Replaces a reservation's estimate by its actual cost (on every rule of a POLICY): 1, or 0 if it is not outstanding"},
		{Name: nameCancel, Arity: -3, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.cancel, Changes: d.changesReserve, Group: "rl",
			Summary: "Gives a reservation's estimate back: 1, or 0 if it is not outstanding"},
		{Name: nameRefund, Arity: -4, Flags: core.FlagWrite | core.FlagAnnounces, Run: d.refund, Changes: d.changesReserve, Group: "rl",
			Summary: "Gives units back to a SLIDE, FIXED or TOKEN key, never beyond its full limit (the rule's, if named): 1 if any came back"},
	}
}

// parseReserve parses RL.RESERVE key rule params… [COST n] TTL t [ID id]
// into r. pc, if not nil, caches the request and the rule's parameters.
// r is filled in place: returned, its nine words were copied twice.
func parseReserve(args [][]byte, pc *ParamCache, r *shard.ReserveRequest) ([]byte, error) {
	if pc != nil {
		if id, ok := pc.reserve.parse(args, r); ok {
			return id, nil
		}
	}
	var id []byte
	var err error
	*r, id, err = parseReserveArgs(args, pc)
	if err == nil && pc != nil {
		pc.reserve.keep(args, *r, id)
	}
	return id, err
}

// parseReserveArgs is parseReserve without its cache of requests.
func parseReserveArgs(args [][]byte, pc *ParamCache) (shard.ReserveRequest, []byte, error) {
	r := shard.ReserveRequest{Op: shard.ReserveNew, Units: 1}
	var n int
	var err error
	if r.Params, n, err = parseAdjustRule(nameReserve, args, pc); err != nil {
		return r, nil, err
	}
	id, err := parseReserveOpts(args[n:], &r)
	return r, id, err
}

// params is the parameter cache of x's connection, or nil for a session
// without a Conn.
func (d *Decisions) params(x *core.Session) *ParamCache {
	if c := d.slot.Get(x); c != nil {
		return &c.Params
	}
	return nil
}

func (d *Decisions) reserveCmd(x *core.Session, args [][]byte) {
	if isWord(args[2], "policy") {
		if len(args) > 3 && d.front.RefusedGlobalPolicy(x, args[1], args[3]) { // region_policy.go
			return
		}
		d.reservePolicyCmd(x, args)
		return
	}
	if d.front.RefusedGlobal(x, args[1], "RL.RESERVE") { // a region's global key (decide.Front)
		return
	}
	var r shard.ReserveRequest
	id, err := parseReserve(args, d.params(x), &r)
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	var idBuf [24]byte
	if id == nil {
		id = newLeaseID(&idBuf)
	}
	r.ID = window.LeaseID(id)
	res, ok := d.reserve(x, args[1], &r)
	if !ok {
		return
	}
	writeReserved(x, res.Decision, id)
}

func (d *Decisions) commit(x *core.Session, args [][]byte) {
	if len(args) != 5 {
		d.settlePolicy(x, args, 5)
		return
	}
	id, err := parseLeaseID(args[2])
	if err == nil && !isWord(args[3], "actual") {
		err = errSyntax
	}
	actual, ok := policy.ParseInt(args[4])
	switch {
	case err != nil:
	case !ok:
		err = errNotInt
	case actual < 0:
		err = errArgReserveActual
	}
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	d.reserveBool(x, args[1], &shard.ReserveRequest{Op: shard.ReserveCommit, ID: window.LeaseID(id), Units: actual})
}

func (d *Decisions) cancel(x *core.Session, args [][]byte) {
	if len(args) != 3 {
		d.settlePolicy(x, args, 3)
		return
	}
	id, err := parseLeaseID(args[2])
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	d.reserveBool(x, args[1], &shard.ReserveRequest{Op: shard.ReserveCancel, ID: window.LeaseID(id)})
}

func (d *Decisions) reserveBool(x *core.Session, key []byte, r *shard.ReserveRequest) {
	res, ok := d.reserve(x, key, r)
	if !ok {
		return
	}
	if res.Done {
		x.Out.WriteInt(1)
	} else {
		x.Out.WriteInt(0)
	}
}

// reserve applies r to key and its ledger at the command's time, telling
// clients that track the key. On an error it replies and returns false.
func (d *Decisions) reserve(x *core.Session, key []byte, r *shard.ReserveRequest) (shard.ReserveResult, bool) {
	if policy.Reserved(key) {
		x.Out.WriteError(string(ErrReserved))
		return shard.ReserveResult{}, false
	}
	// The ledger's key is built in the session's scratch buffer, which the
	// reply is written in only later: the store copies what it keeps. A
	// buffer on the stack for any key but a long one was 320 bytes to zero
	// at every command.
	x.Scratch = policy.AppendLedgerKey(x.Scratch[:0], key)
	res, err := d.store.Reserve(key, x.Scratch, r, d.front.Now(x))
	if err != nil {
		x.Out.WriteError(reserveError(err))
		return res, false
	}
	if d.watch.Load() != 0 { // the Tracker's own check, without its call while nobody watches
		d.front.Changed(x, key)
	}
	d.countReserve(x, r.Op, res.Decision, res.Done)
	return res, true
}
