package server

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The reservation commands' argument errors (docs/commands.md, Reservations).
const (
	errArgReserveRule   argError = "ERR the rule must be SLIDE, FIXED or TOKEN"
	errArgReserveTTL    argError = "ERR RL.RESERVE needs TTL ttl"
	errArgReserveActual argError = "ERR actual must be at least 0"
)

// reserveCommands are the commands of budgets whose cost is known only
// afterwards (docs/commands.md, Reservations).
func reserveCommands() []command {
	return []command{
		{name: "rl.reserve", arity: -5, flags: flagWrite | flagAnnounces, run: cmdReserve, changes: changesReserve, group: "rl",
			summary: "Charges an estimate now, to be replaced by the actual cost: replies allowed, id, limit, remaining, wait_ms, reset_ms"},
		{name: "rl.commit", arity: -5, flags: flagWrite | flagAnnounces, run: cmdCommit, changes: changesReserve, group: "rl",
			summary: "Replaces a reservation's estimate by its actual cost (on every rule of a POLICY): 1, or 0 if it is not outstanding"},
		{name: "rl.cancel", arity: -3, flags: flagWrite | flagAnnounces, run: cmdCancel, changes: changesReserve, group: "rl",
			summary: "Gives a reservation's estimate back: 1, or 0 if it is not outstanding"},
		{name: "rl.refund", arity: -4, flags: flagWrite | flagAnnounces, run: cmdRefund, changes: changesReserve, group: "rl",
			summary: "Gives units back to a SLIDE, FIXED or TOKEN key, never beyond its full limit (the rule's, if named): 1 if any came back"},
	}
}

// parseReserve parses RL.RESERVE key rule params… [COST n] TTL t [ID id].
func parseReserve(args [][]byte) (shard.ReserveRequest, []byte, error) {
	r := shard.ReserveRequest{Op: shard.ReserveNew, Units: 1}
	var n int
	var err error
	if r.Params, n, err = parseAdjustRule("rl.reserve", args); err != nil {
		return r, nil, err
	}
	id, err := parseReserveOpts(args[n:], &r)
	return r, id, err
}

func cmdReserve(s *Server, c *client, args [][]byte) {
	if equalFoldASCII(args[2], "policy") {
		if len(args) > 3 && s.refusedGlobalPolicy(c, args[1], args[3]) { // region.go
			return
		}
		cmdReservePolicy(s, c, args)
		return
	}
	if s.refusedGlobal(c, args[1], "RL.RESERVE") { // region.go
		return
	}
	r, id, err := parseReserve(args)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	var idBuf [24]byte
	if id == nil {
		id = newLeaseID(&idBuf)
	}
	r.ID = window.LeaseID(id)
	res, ok := s.reserve(c, args[1], &r)
	if !ok {
		return
	}
	writeReserved(c, res.Decision, id)
}

func cmdCommit(s *Server, c *client, args [][]byte) {
	if len(args) != 5 {
		cmdSettlePolicy(s, c, args, 5)
		return
	}
	id, err := parseLeaseID(args[2])
	if err == nil && !equalFoldASCII(args[3], "actual") {
		err = errArgSyntax
	}
	actual, ok := parseInt(args[4])
	switch {
	case err != nil:
	case !ok:
		err = errArgNotInt
	case actual < 0:
		err = errArgReserveActual
	}
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	reserveBool(s, c, args[1], &shard.ReserveRequest{Op: shard.ReserveCommit, ID: window.LeaseID(id), Units: actual})
}

func cmdCancel(s *Server, c *client, args [][]byte) {
	if len(args) != 3 {
		cmdSettlePolicy(s, c, args, 3)
		return
	}
	id, err := parseLeaseID(args[2])
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	reserveBool(s, c, args[1], &shard.ReserveRequest{Op: shard.ReserveCancel, ID: window.LeaseID(id)})
}

func reserveBool(s *Server, c *client, key []byte, r *shard.ReserveRequest) {
	res, ok := s.reserve(c, key, r)
	if !ok {
		return
	}
	if res.Done {
		c.conn.WriteInt(1)
	} else {
		c.conn.WriteInt(0)
	}
}

// reserve applies r to key and its ledger at the command's time, telling
// clients that track the key. On an error it replies and returns false.
func (s *Server) reserve(c *client, key []byte, r *shard.ReserveRequest) (shard.ReserveResult, bool) {
	if policy.Reserved(key) {
		c.conn.WriteError(string(errArgReserved))
		return shard.ReserveResult{}, false
	}
	var buf [320]byte // the ledger's key, on the stack unless key is long
	ledger := policy.AppendLedgerKey(buf[:0], key)
	res, err := s.cfg.Store.Reserve(key, ledger, *r, s.commandNow(c))
	if err != nil {
		c.conn.WriteError(reserveError(err))
		return res, false
	}
	if s.obs.Active() {
		s.invalidate(c, key)
	}
	countReserve(c, r.Op, res.Decision, res.Done)
	return res, true
}
