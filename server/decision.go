package server

import (
	"strings"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// decisionCommands are every decision command: the native ones (docs/commands.md, Decision commands),
// one line each, CL.THROTTLE and RL.CHECK. Each parses its arguments into a
// request and hands it to decide; its entry (decisionEntry) declares all
// that the server does around a decision.
func decisionCommands() []command {
	throttle := decisionEntry("cl.throttle", -5, parseThrottleReq, 1)
	throttle.peek, throttle.blind = peekThrottle, blindThrottle
	check := decisionEntry("rl.check", -3, parseCheckReq, 2)
	check.peek, check.changes, check.blind = peekFrom(3), changesCheck, blindCheck
	check.flags &^= flagPrefetch // its key routes; the store's keys are its policy's rule keys
	check.summary = "Decides a request against every rule of a policy, all or nothing"
	return []command{
		nativeCommand(window.KindSlide),
		nativeCommand(window.KindToken),
		nativeCommand(window.KindFixed),
		nativeCommand(window.KindLog),
		nativeCommand(window.KindLeaky),
		throttle,
		check,
	}
}

// nativeCommand is the table entry of RL.<KIND> key params… [COST n] [PEEK],
// the command that runs kind's algorithm; window says what params it takes.
func nativeCommand(kind window.Kind) command {
	cm := decisionEntry(strings.ToLower(decide.NativeName(kind)), -(2 + policy.Arity(kind)), nativeParser(kind), 1)
	cm.peek = peekFrom(2)
	return cm
}

// decisionEntry is the table entry of a decision command whose key is
// argument key: a write that may add a key (denyoom) in O(1) (fast), as
// Redis would flag it, like INCR; its key is routed, prefetched when
// pipelined, and taken back if its commit fails; it announces its own
// changes to CLIENT TRACKING (decide does); and with no node to decide it,
// --owner-unreachable allow|deny answers blindNative. Every guarantee the
// server gives a decision comes from this entry (TestOneEntryDecision).
func decisionEntry(name string, arity int, parse parseFunc, key int) command {
	return command{name: name, arity: arity, flags: flagWrite | flagDenyOOM | flagFast | flagPrefetch | flagAnnounces,
		acl: catRL, keys: one(keyRW|keyAccess|keyUpdate, key), run: decisionRun(parse), group: "rl",
		changes: changesKey, blind: blindNative}
}

// nativeParser returns the parser of kind's native command.
func nativeParser(kind window.Kind) parseFunc {
	return func(s *Server, c *client, args [][]byte) ([]byte, request, error) {
		a, err := decide.ParseNative(kind, args, &c.dec.Params)
		return a.Key, request{op: opNative, params: a.Params, cost: a.Cost, peek: a.Peek}, err
	}
}

// op says which kind of decision a request asks for.
type op uint8

const (
	opNative   op = iota // RL.SLIDE, RL.TOKEN, RL.FIXED, RL.LOG, RL.LEAKY: params
	opThrottle           // CL.THROTTLE: throttle, with cost as its quantity
	opCheck              // RL.CHECK: policy
)

// request is one decision, everything decide needs besides the key. It is
// self-contained, so that a cluster can send it to the key's owner:
// appendCommand writes it back as the command that asked for it.
type request struct {
	op       op
	params   window.Params   // opNative
	throttle window.Throttle // opThrottle
	policy   *policy.Policy  // opCheck
	pstats   *policyStats    // opCheck: the policy's counters
	cost     int64           // units; CL.THROTTLE's quantity (0 peeks, < 0 refunds)
	peek     bool            // decide, but change nothing
	now      int64           // unix nanoseconds, read once per command
	by       *client         // who asked, for CLIENT TRACKING's NOLOOP; nil if no local client did
	hash     uint64          // opNative: the key's hash, if hashed (see decide.Conn.KeyHash)
	hashed   bool
}

// outcome is a decision: d for the RL commands (for RL.CHECK the binding
// rule's, and rule its index), throttle for CL.THROTTLE.
type outcome struct {
	d        window.Decision
	throttle window.ThrottleReply
	rule     int
	shadowed bool // RL.CHECK of a global policy: its rules denied, its SHADOW admitted
}

// decide is the decision seam: every decision command (RL.SLIDE, RL.TOKEN,
// RL.FIXED, RL.LOG, RL.LEAKY, CL.THROTTLE, RL.CHECK) is decided here and
// nowhere else. A cluster forwards a key it does not own from here, and
// metrics count here. It allocates nothing, and must stay so: the
// allocation tests run every command through it.
//
// Clients caching the key's reads (CLIENT TRACKING) are told it changed
// from here, once the store has changed it; with nobody tracking that costs
// one atomic load. RL.CHECK's state lives under hidden keys no read shows.
func (s *Server) decide(key []byte, r *request) (o outcome, err error) {
	if policy.Reserved(key) {
		return outcome{}, decide.ErrReserved
	}
	if s.reg != nil && s.reg.Global(key) { // region.go
		if o, ok, err := s.decideGlobal(key, r); ok {
			if err == nil {
				s.countDecision(r, &o, !o.d.Allowed || o.shadowed)
			}
			return o, err
		}
	}
	switch r.op {
	case opThrottle:
		o.throttle, err = s.cfg.Store.Throttle(key, r.throttle, r.now, r.cost)
	case opCheck:
		var denied bool
		if o, denied, err = s.check(key, r); err == nil {
			s.countDecision(r, &o, denied)
		}
		return o, err
	case opNative:
		if r.hashed {
			o.d, err = s.cfg.Store.DecideHashed(key, r.hash, r.params, r.now, r.cost, r.peek)
		} else {
			o.d, err = s.cfg.Store.Decide(key, r.params, r.now, r.cost, r.peek)
		}
	}
	if err == nil {
		s.countDecision(r, &o, false)
	}
	if s.obs.Active() && !r.peek {
		s.invalidate(r.by, key)
	}
	return o, err
}

// check decides r against every rule of its policy, all or nothing. A
// SHADOW policy admits what its rules deny; the store counts the denial,
// and denied says whether the rules denied it.
func (s *Server) check(key []byte, r *request) (outcome, bool, error) {
	// The rule keys are built on the stack, so that a request allocates
	// nothing unless its keys outgrow keyBuf. (Filled in here, not by a
	// function given &keys: a store through a pointer makes them escape.)
	p := r.policy
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
	ds, left, err := s.cfg.Store.DecideAll(key, &q, r.now, r.cost, r.peek, buf[:0])
	if err != nil {
		return outcome{}, false, err
	}
	d, i := decide.Binding(ds, left)
	denied := !d.Allowed
	if denied && p.Shadow {
		d.Allowed, d.Wait = true, 0
	}
	return outcome{d: d, rule: i}, denied, nil
}

// parseFunc parses a decision command into its key and request.
type parseFunc func(s *Server, c *client, args [][]byte) ([]byte, request, error)

// decisionRun returns the run function of a decision command: parse, then decide.
func decisionRun(parse parseFunc) func(s *Server, c *client, args [][]byte) {
	return func(s *Server, c *client, args [][]byte) {
		key, r, err := parse(s, c, args)
		s.run1(c, key, &r, err)
	}
}

// parseThrottleReq parses CL.THROTTLE key max_burst count period [quantity],
// redis-cell's command: the reply is [limited, limit, remaining, retry_after_s, reset_after_s].
func parseThrottleReq(s *Server, c *client, args [][]byte) ([]byte, request, error) {
	p, q, err := decide.ParseThrottle(args)
	return args[1], request{op: opThrottle, throttle: p, cost: q, peek: q == 0}, err
}

// parseCheckReq parses RL.CHECK name key [COST n] [PEEK]. The reply is the
// binding rule's five decision fields and its index.
func parseCheckReq(s *Server, c *client, args [][]byte) ([]byte, request, error) {
	a := decide.NativeArgs{Key: args[2]}
	err := decide.ParseOptions(args[3:], &a)
	r := request{op: opCheck, cost: a.Cost, peek: a.Peek}
	if err == nil && !policy.Reserved(a.Key) { // a reserved key's error comes first
		if r.policy, r.pstats = s.policyWithStats(args[1]); r.policy == nil {
			err = policy.Error("ERR no such policy '" + core.QuoteArg(args[1], 128) + "'")
		}
	}
	return a.Key, r, err
}

// run1 decides one parsed request at the server's time and writes the reply,
// or replies to the error parsing or deciding it gave.
func (s *Server) run1(c *client, key []byte, r *request, err error) {
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	r.now, r.by = s.commandNow(c), c
	if r.op == opNative {
		r.hash, r.hashed = c.dec.KeyHash(c.rc, key)
	}
	o, err := s.decide(key, r)
	if err != nil {
		c.conn.WriteError(decide.Reply(err))
		return
	}
	writeOutcome(c, r, o)
}

// decideFront is the server as the decision commands' decide.Front.
type decideFront struct{ s *Server }

func (f decideFront) Now(x *core.Session) int64 { return f.s.commandNow(f.s.clientOf(x)) }

func (f decideFront) Changed(x *core.Session, key []byte) {
	if f.s.obs.Active() {
		f.s.invalidate(f.s.clientOf(x), key)
	}
}

func (f decideFront) RefusedGlobal(x *core.Session, key []byte, cmd string) bool {
	return f.s.refusedGlobal(f.s.clientOf(x), key, cmd)
}

func (f decideFront) RefusedGlobalPolicy(x *core.Session, key, name []byte) bool {
	return f.s.refusedGlobalPolicy(f.s.clientOf(x), key, name)
}

func (f decideFront) Policy(name []byte) *policy.Policy { return f.s.policy(name) }
