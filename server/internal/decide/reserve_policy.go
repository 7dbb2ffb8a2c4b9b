package decide

import (
	"errors"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The errors of reservations' arguments (docs/commands.md, Reservations).
const (
	ErrReservePolicy policy.Error = "ERR the policy's rules must all be SLIDE, FIXED or TOKEN, and it must not be SHADOW"
	errArgEstimate   policy.Error = "ERR cost must be between 1 and 2199023255551" // window.MaxEstimate
)

// parseReserveOpts parses RL.RESERVE's options, [COST n] TTL t [ID id],
// into r and returns the id given, nil if none.
func parseReserveOpts(args [][]byte, r *shard.ReserveRequest) ([]byte, error) {
	var id []byte
	var err error
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return nil, errSyntax
		}
		v, opt := args[i+1], args[i]
		switch {
		case isWord(opt, "cost"):
			var ok bool
			if r.Units, ok = policy.ParseInt(v); !ok {
				return nil, errNotInt
			}
		case isWord(opt, "ttl"):
			if r.TTL, err = parseLeaseTTL(v); err != nil {
				return nil, err
			}
		case isWord(opt, "id"):
			if id, err = parseLeaseID(v); err != nil {
				return nil, err
			}
		default:
			return nil, errSyntax
		}
	}
	switch {
	case r.Units < 1 || r.Units > window.MaxEstimate:
		return nil, errArgEstimate
	case r.TTL == 0:
		return nil, errArgReserveTTL
	}
	return id, nil
}

// writeReserved writes RL.RESERVE's reply: the decision with the id second.
func writeReserved(x *core.Session, dec window.Decision, id []byte) {
	f := Fields(dec)
	x.Scratch = AppendWithID(x.Scratch[:0], f[0], id, [4]int64{f[1], f[2], f[3], f[4]})
	x.Out.WriteRaw(x.Scratch)
}

// reservePolicy returns the policy named name if a reservation can be made
// against it, else the error to reply.
func (d *Decisions) reservePolicy(key, name []byte) (*policy.Policy, error) {
	if policy.Reserved(key) {
		return nil, ErrReserved
	}
	p := d.front.Policy(name)
	if p == nil {
		return nil, policy.Error("ERR no such policy '" + core.QuoteArg(name, 128) + "'")
	}
	if p.Shadow {
		return nil, ErrReservePolicy
	}
	for _, r := range p.Rules {
		if !r.Kind.Adjustable() {
			return nil, ErrReservePolicy
		}
	}
	return p, nil
}

// reserveAll runs r against every rule of p for key (Store.ReserveAll) at
// the command's time and returns the binding rule's decision (a new
// reservation) and whether the reservation was outstanding (a retry, a
// commit or a cancel). The keys are built on the stack here, as check
// builds them: given to a function through a pointer, they would escape.
func (d *Decisions) reserveAll(x *core.Session, key []byte, p *policy.Policy, r shard.ReserveRequest) (window.Decision, bool, error) {
	var keyBuf [1024]byte
	var keys [policy.MaxRules][]byte
	kb := keyBuf[:0]
	for i := range p.Rules {
		start := len(kb)
		kb = p.AppendRuleKey(kb, i, key)
		keys[i] = kb[start:len(kb):len(kb)]
	}
	q := shard.Multi{Keys: keys[:len(p.Rules)], Params: p.Rules}
	if p.Penalty > 0 {
		start := len(kb)
		kb = p.AppendPenaltyKey(kb, key)
		q.Penalty, q.For = kb[start:len(kb):len(kb)], p.Penalty
	}
	ledger := p.AppendLedgerKey(kb[len(kb):], key)
	var buf [policy.MaxRules]window.Decision
	ds, left, res, err := d.store.ReserveAll(key, ledger, &q, r, d.front.Now(x), buf[:0])
	if err != nil || len(ds) == 0 {
		if err == nil {
			d.countReserve(x, r.Op, window.Decision{}, res.Done)
		}
		return window.Decision{}, res.Done, err
	}
	dec, _ := Binding(ds, left)
	d.countReserve(x, r.Op, dec, res.Done)
	return dec, res.Done, nil
}

// cmdReservePolicy runs RL.RESERVE key POLICY name [COST n] TTL t [ID id]:
// the estimate is charged to every rule of the policy, all or nothing, as
// RL.CHECK decides; the reply is RL.RESERVE's, from the binding rule.
func (d *Decisions) reservePolicyCmd(x *core.Session, args [][]byte) {
	key := args[1]
	p, err := d.reservePolicy(key, args[3])
	r := shard.ReserveRequest{Op: shard.ReserveNew, Units: 1}
	var id []byte
	if err == nil {
		id, err = parseReserveOpts(args[4:], &r)
	}
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	var idBuf [24]byte
	if id == nil {
		id = newLeaseID(&idBuf)
	}
	r.ID = window.LeaseID(id)
	dec, _, err := d.reserveAll(x, key, p, r)
	if err != nil {
		x.Out.WriteError(reserveError(err))
		return
	}
	d.front.Changed(x, key)
	writeReserved(x, dec, id)
}

// cmdSettlePolicy runs RL.COMMIT key id ACTUAL n POLICY name and RL.CANCEL
// key id POLICY name, whose plain forms have n arguments.
func (d *Decisions) settlePolicy(x *core.Session, args [][]byte, n int) {
	if len(args) != n+2 || !core.EqualFold(args[n], "policy") {
		x.Out.WriteError(string(errSyntax))
		return
	}
	key := args[1]
	p, err := d.reservePolicy(key, args[n+1])
	var id []byte
	if err == nil {
		id, err = parseLeaseID(args[2])
	}
	r := shard.ReserveRequest{Op: shard.ReserveCancel}
	if err == nil && n == 5 {
		r.Op = shard.ReserveCommit
		r.Units, err = parseActual(args[3], args[4])
	}
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	r.ID = window.LeaseID(id)
	_, done, err := d.reserveAll(x, key, p, r)
	if err != nil {
		x.Out.WriteError(reserveError(err))
		return
	}
	d.front.Changed(x, key)
	if done {
		x.Out.WriteInt(1)
	} else {
		x.Out.WriteInt(0)
	}
}

// parseActual parses RL.COMMIT's ACTUAL n.
func parseActual(word, v []byte) (int64, error) {
	if !core.EqualFold(word, "actual") {
		return 0, errSyntax
	}
	n, ok := policy.ParseInt(v)
	switch {
	case !ok:
		return 0, errNotInt
	case n < 0:
		return 0, errArgReserveActual
	}
	return n, nil
}

// reserveError words a store error of a reservation as a reply.
func reserveError(err error) string {
	if errors.Is(err, window.ErrCost) {
		return string(errArgEstimate)
	}
	return Reply(err)
}

// changesReserve are the keys RL.RESERVE, RL.COMMIT, RL.CANCEL and
// RL.REFUND change: the key and its reservation ledger, which lives in the
// key's shard (policy.AppendLedgerKey), so the key routes both.
func (d *Decisions) changesReserve(args [][]byte) ([][]byte, []byte) {
	if keys, ok := d.changesReservePolicy(args); ok {
		return keys, args[1]
	}
	return [][]byte{args[1], policy.AppendLedgerKey(nil, args[1])}, args[1]
}

// changesReservePolicy are the keys the POLICY forms of RL.RESERVE,
// RL.COMMIT and RL.CANCEL change: the policy's rule keys, its penalty's
// and its ledger of the key. It reports false for another form.
func (d *Decisions) changesReservePolicy(args [][]byte) ([][]byte, bool) {
	var name []byte
	switch {
	case len(args) >= 6 && core.EqualFold(args[2], "policy"): // RL.RESERVE key POLICY name … TTL t
		name = args[3]
	case len(args) >= 5 && core.EqualFold(args[len(args)-2], "policy"): // RL.COMMIT and RL.CANCEL … POLICY name
		name = args[len(args)-1]
	default:
		return nil, false
	}
	p := d.front.Policy(name)
	if p == nil {
		return nil, true
	}
	return append(RuleKeys(p, args[1]), p.AppendLedgerKey(nil, args[1])), true
}
