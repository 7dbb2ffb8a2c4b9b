package decide

import (
	"strings"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// DecisionCommands are every decision command: the native ones
// (docs/commands.md, Decision commands), one line each, CL.THROTTLE and
// RL.CHECK. Each parses its arguments into a Request and hands it to
// Decide; its entry (decisionEntry) declares all that the server does
// around a decision.
func (d *Decisions) DecisionCommands() []core.Command {
	throttle := d.decisionEntry(nameThrottle, -5, parseThrottleReq, 1)
	throttle.Peek, throttle.Blind = peekThrottle, blindThrottle
	check := d.decisionEntry(nameCheck, -3, parseCheckReq, 2)
	check.Peek, check.Changes, check.Blind = peekFrom(3), d.changesCheck, blindCheck
	check.Flags &^= core.FlagPrefetch // its key routes; the store's keys are its policy's rule keys
	check.Summary = "Decides a request against every rule of a policy, all or nothing"
	return []core.Command{
		d.NativeCommand(window.KindSlide),
		d.NativeCommand(window.KindToken),
		d.NativeCommand(window.KindFixed),
		d.NativeCommand(window.KindLog),
		d.NativeCommand(window.KindLeaky),
		throttle,
		check,
	}
}

// NativeCommand is the table entry of RL.<KIND> key params… [COST n] [PEEK],
// the command that runs kind's algorithm; window says what params it takes.
func (d *Decisions) NativeCommand(kind window.Kind) core.Command {
	cm := d.decisionEntry(strings.ToLower(NativeName(kind)), -(2 + policy.Arity(kind)), NativeParser(kind), 1)
	cm.Peek = peekFrom(2)
	return cm
}

// decisionEntry is the table entry of a decision command whose key is
// argument key: a write that may add a key (denyoom) in O(1) (fast), as
// Redis would flag it, like INCR; its key is routed, prefetched when
// pipelined, and taken back if its commit fails; it announces its own
// changes to CLIENT TRACKING (Decide does); and with no node to decide it,
// --owner-unreachable allow|deny answers blindNative. Every guarantee the
// server gives a decision comes from this entry (the server's
// TestOneEntryDecision).
func (d *Decisions) decisionEntry(name string, arity int, parse Parser, key int) core.Command {
	return core.Command{Name: name, Arity: arity,
		Flags: core.FlagWrite | core.FlagDenyOOM | core.FlagFast | core.FlagPrefetch | core.FlagAnnounces,
		ACL:   core.CatRL, Keys: []core.KeySpec{{Flags: core.KeyRW | core.KeyAccess | core.KeyUpdate, Index: key, Step: 1}},
		Run: d.decisionRun(parse), Group: "rl", Changes: changesKey, Blind: blindNative}
}

// Parser parses a decision command into its key and request; c is the
// connection's decision state.
type Parser func(d *Decisions, c *Conn, args [][]byte) ([]byte, Request, error)

// NativeParser returns the parser of kind's native command.
func NativeParser(kind window.Kind) Parser {
	return func(_ *Decisions, c *Conn, args [][]byte) ([]byte, Request, error) {
		a, err := ParseNative(kind, args, &c.Params)
		return a.Key, Request{Op: OpNative, Params: a.Params, Cost: a.Cost, Peek: a.Peek}, err
	}
}

// Op says which kind of decision a request asks for.
type Op uint8

const (
	OpNative   Op = iota // RL.SLIDE, RL.TOKEN, RL.FIXED, RL.LOG, RL.LEAKY: Params
	OpThrottle           // CL.THROTTLE: Throttle, with Cost as its quantity
	OpCheck              // RL.CHECK: Policy
)

// Request is one decision, everything Decide needs besides the key. It is
// self-contained, so that a cluster can send it to the key's owner:
// AppendCommand writes it back as the command that asked for it.
type Request struct {
	Op       Op
	Params   window.Params   // OpNative
	Throttle window.Throttle // OpThrottle
	Policy   *policy.Policy  // OpCheck
	Stats    *PolicyStats    // OpCheck: the policy's counters, or nil
	Cost     int64           // units; CL.THROTTLE's quantity (0 peeks, < 0 refunds)
	Peek     bool            // decide, but change nothing
	Now      int64           // unix nanoseconds, read once per command
	By       *core.Session   // who asked, for CLIENT TRACKING's NOLOOP and the counts; nil if no local client did
	Hash     uint64          // OpNative: the key's hash, if Hashed (see Conn.KeyHash)
	Hashed   bool

	conn *Conn // By's decision state, where it is counted; nil counts in the shared Counts
}

// Outcome is a decision: D for the RL commands (for RL.CHECK the binding
// rule's, and Rule its index), Throttle for CL.THROTTLE.
type Outcome struct {
	D        window.Decision
	Throttle window.ThrottleReply
	Rule     int
	Shadowed bool // RL.CHECK of a global policy: its rules denied, its SHADOW admitted
}

// Regions decides the keys global across regions: the server's regions
// (server/internal/global), which the seam asks but may not import.
type Regions interface {
	// Global reports whether key is global.
	Global(key []byte) bool
	// Decide decides r on the global key; ok is false for a request the
	// regions leave to the local store (RL.CHECK of a policy that is not
	// global). r is a copy: a request given to an interface by pointer
	// would escape to the heap, every decision's.
	Decide(key []byte, r Request) (o Outcome, ok bool, err error)
	// InfoSplit returns RL.INFO's fields of the global key: each region's
	// units of it; none if it has none yet.
	InfoSplit(key []byte) []core.Pair
}

// DecideGlobals makes the seam ask r for the global keys. The server
// calls it once, before it serves, if it has regions.
func (d *Decisions) DecideGlobals(r Regions) { d.regions = r }

// Decide is the decision seam: every decision command (RL.SLIDE, RL.TOKEN,
// RL.FIXED, RL.LOG, RL.LEAKY, CL.THROTTLE, RL.CHECK, GCRA, THROTTLE) is
// decided here and nowhere else. A cluster forwards a key it does not own
// before it, and metrics count here. It allocates nothing, and must stay
// so: the allocation tests run every command through it.
//
// Clients caching the key's reads (CLIENT TRACKING) are told it changed
// from here, once the store has changed it; with nobody tracking that costs
// one atomic load. RL.CHECK's state lives under hidden keys no read shows.
func (d *Decisions) Decide(key []byte, r *Request) (o Outcome, err error) {
	if policy.Reserved(key) {
		return Outcome{}, ErrReserved
	}
	if d.regions != nil && d.regions.Global(key) {
		if o, ok, err := d.regions.Decide(key, *r); ok {
			if err == nil {
				d.countDecision(r, &o, !o.D.Allowed || o.Shadowed)
			}
			return o, err
		}
	}
	switch r.Op {
	case OpThrottle:
		o.Throttle, err = d.store.Throttle(key, r.Throttle, r.Now, r.Cost)
	case OpCheck:
		var denied bool
		if o, denied, err = d.check(key, r); err == nil {
			d.countDecision(r, &o, denied)
		}
		return o, err
	case OpNative:
		if r.Hashed {
			o.D, err = d.store.DecideHashed(key, r.Hash, r.Params, r.Now, r.Cost, r.Peek)
		} else {
			o.D, err = d.store.Decide(key, r.Params, r.Now, r.Cost, r.Peek)
		}
	}
	if err == nil {
		d.countDecision(r, &o, false)
	}
	if !r.Peek && d.watch.Load() != 0 {
		d.front.Changed(r.By, key)
	}
	return o, err
}

// check decides r against every rule of its policy, all or nothing. A
// SHADOW policy admits what its rules deny; the store counts the denial,
// and denied says whether the rules denied it.
func (d *Decisions) check(key []byte, r *Request) (Outcome, bool, error) {
	// The rule keys are built on the stack, so that a request allocates
	// nothing unless its keys outgrow keyBuf. (Filled in here, not by a
	// function given &keys: a store through a pointer makes them escape.)
	p := r.Policy
	var keyBuf [512]byte
	var keys [policy.MaxRules][]byte
	kb := keyBuf[:0]
	for i := range p.Rules {
		start := len(kb)
		kb = p.AppendRuleKey(kb, i, key)
		keys[i] = kb[start:len(kb):len(kb)]
	}
	q := shard.Multi{Keys: keys[:len(p.Rules)], Params: p.Rules, Shadow: p.Shadow}
	if p.Penalty > 0 {
		q.Penalty, q.For = p.AppendPenaltyKey(kb[len(kb):], key), p.Penalty
	}
	var buf [policy.MaxRules]window.Decision
	ds, left, err := d.store.DecideAll(key, &q, r.Now, r.Cost, r.Peek, buf[:0])
	if err != nil {
		return Outcome{}, false, err
	}
	dec, i := Binding(ds, left)
	denied := !dec.Allowed
	if denied && p.Shadow {
		dec.Allowed, dec.Wait = true, 0
	}
	return Outcome{D: dec, Rule: i}, denied, nil
}

// decisionRun returns the run function of a decision command: parse, then decide.
func (d *Decisions) decisionRun(parse Parser) core.RunFunc {
	return func(x *core.Session, args [][]byte) {
		c := d.slot.Get(x)
		key, r, err := parse(d, c, args)
		d.run1(x, c, key, &r, err)
	}
}

// parseThrottleReq parses CL.THROTTLE key max_burst count period [quantity],
// redis-cell's command: the reply is [limited, limit, remaining, retry_after_s, reset_after_s].
func parseThrottleReq(_ *Decisions, _ *Conn, args [][]byte) ([]byte, Request, error) {
	p, q, err := ParseThrottle(args)
	return args[1], Request{Op: OpThrottle, Throttle: p, Cost: q, Peek: q == 0}, err
}

// parseCheckReq parses RL.CHECK name key [COST n] [PEEK]. The reply is the
// binding rule's five decision fields and its index.
func parseCheckReq(d *Decisions, _ *Conn, args [][]byte) ([]byte, Request, error) {
	a := NativeArgs{Key: args[2]}
	err := ParseOptions(args[3:], &a)
	r := Request{Op: OpCheck, Cost: a.Cost, Peek: a.Peek}
	if err == nil && !policy.Reserved(a.Key) { // a reserved key's error comes first
		if r.Policy, r.Stats = d.pols.WithStats(args[1]); r.Policy == nil {
			err = policy.Error("ERR no such policy '" + core.QuoteArg(args[1], 128) + "'")
		}
	}
	return a.Key, r, err
}

// run1 decides one parsed request at the command's time and writes the
// reply, or replies to the error parsing or deciding it gave; c is x's
// decision state.
func (d *Decisions) run1(x *core.Session, c *Conn, key []byte, r *Request, err error) {
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	r.Now, r.By, r.conn = d.clock.At(x, x.Mark), x, c
	if r.Op == OpNative {
		r.Hash, r.Hashed = c.KeyHash(key)
	}
	o, err := d.Decide(key, r)
	if err != nil {
		x.Out.WriteError(Reply(err))
		return
	}
	writeOutcome(x, r, o)
}
