package server

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// The argument errors of RL.POLICY and RL.CHECK.
const (
	errArgPolicyName  argError = "ERR policy name must not be empty"
	errArgNoRules     argError = "ERR a policy needs at least one rule: SLIDE limit window | TOKEN capacity rate period | FIXED limit window | LOG limit window | LEAKY capacity rate period"
	errArgManyRules   argError = "ERR a policy has at most 32 rules"
	errArgPenaltyDur  argError = "ERR penalty must be a duration between 1ms and 3650d"
	errArgArityCheck  argError = "ERR wrong number of arguments for 'rl.check' command"
	errArgRuleArgs    argError = "ERR wrong number of arguments for a policy rule"
	errArgPolicyBytes argError = "ERR policy name plus definition must be at most 1 MiB"
)

// policy is a parsed policy, as RL.CHECK uses it.
type policy struct {
	name    string
	rules   []window.Params
	penalty time.Duration // 0: none
	shadow  bool
	def     []string // the definition as RL.POLICY GET shows it (and the store keeps it)
}

// policies holds the parsed policies. RL.CHECK reads them under a read lock;
// RL.POLICY SET and DEL write the durable store and then the map, under
// write, so that the two never disagree on the order of changes.
type policies struct {
	write  sync.Mutex   // serialises changes: store first, then byName
	mu     sync.RWMutex // guards byName
	byName map[string]*policy
}

// policyCommands is RL.POLICY (SPEC §4); RL.CHECK is a decision command.
func policyCommands() []command {
	return []command{
		{name: "rl.policy", arity: -2, group: "rl", summary: "Defines named, durable, multi-rule policies", subs: []command{
			{name: "set", arity: -5, flags: flagWrite, run: cmdPolicySet, summary: "Defines or redefines a policy; +OK once it is durable"},
			{name: "get", arity: 3, run: cmdPolicyGet, summary: "Returns a policy's definition"},
			{name: "del", arity: 3, flags: flagWrite, run: cmdPolicyDel, summary: "Deletes a policy"},
			{name: "list", arity: 2, run: cmdPolicyList, summary: "Lists the policies' names"},
			{name: "help", arity: 2, run: cmdPolicyHelp, summary: "Lists RL.POLICY's subcommands"},
		}},
	}
}

// loadPolicies reads every policy of the durable store, if there is one.
func (s *Server) loadPolicies() error {
	s.pol.byName = map[string]*policy{}
	st := s.cfg.Policies
	if st == nil {
		return nil
	}
	for _, name := range st.List() {
		def, _ := st.Get(name)
		p, err := parsePolicy(name, strings.Fields(string(def)))
		if err != nil {
			return fmt.Errorf("server: stored policy %q: %v", name, err)
		}
		s.pol.byName[name] = p
	}
	return nil
}

// parsePolicy parses "rule [rule …] [PENALTY d] [SHADOW]".
func parsePolicy(name string, args []string) (*policy, error) {
	if name == "" {
		return nil, errArgPolicyName
	}
	p := &policy{name: name}
	for i := 0; i < len(args); {
		word := strings.ToUpper(args[i])
		var n int
		var err error
		switch word {
		case "SHADOW":
			p.shadow = true
			p.def = append(p.def, word)
			i++
			continue
		case "PENALTY":
			n, err = 2, p.parsePenalty(args[i+1:])
		default:
			n, err = p.parseRule(word, args[i+1:])
		}
		if err != nil {
			return nil, err
		}
		p.def = append(append(p.def, word), args[i+1:i+n]...)
		i += n
	}
	switch {
	case len(p.rules) == 0:
		return nil, errArgNoRules
	case len(p.rules) > shard.MaxRules:
		return nil, errArgManyRules
	}
	return p, nil
}

func (p *policy) parsePenalty(args []string) error {
	if len(args) < 1 {
		return errArgSyntax
	}
	d, ok := parseDuration([]byte(args[0]))
	if !ok || d < time.Millisecond || d > window.MaxWindow {
		return errArgPenaltyDur
	}
	p.penalty = d
	return nil
}

// parseRule parses one rule's arguments after its name, as the rule's
// command would, and returns how many words it took with the name.
func (p *policy) parseRule(word string, args []string) (int, error) {
	kinds := map[string]window.Kind{"SLIDE": window.KindSlide, "TOKEN": window.KindToken,
		"FIXED": window.KindFixed, "LOG": window.KindLog, "LEAKY": window.KindLeaky}
	kind, ok := kinds[word]
	if !ok {
		return 0, errArgSyntax
	}
	n := 2
	if kind == window.KindToken || kind == window.KindLeaky {
		n = 3
	}
	if len(args) < n {
		return 0, errArgRuleArgs
	}
	cmd := [][]byte{[]byte(word), nil}
	for _, a := range args[:n] {
		cmd = append(cmd, []byte(a))
	}
	var a decisionArgs
	var err error
	switch kind {
	case window.KindSlide:
		a, err = parseSlide(cmd)
	case window.KindToken, window.KindLeaky:
		a, err = parseToken(cmd)
	default:
		if a, err = parseLimitWindow(cmd, kind, errArgRuleArgs); err == nil {
			err = checkLimitWindow(a.params)
		}
	}
	a.params.Kind = kind
	p.rules = append(p.rules, a.params)
	return n + 1, err
}

// cmdPolicySet is RL.POLICY SET name rule [rule …] [PENALTY d] [SHADOW]. It
// replies +OK only once the policy is durable (fsynced), when the server has
// a policy store.
func cmdPolicySet(s *Server, c *client, args [][]byte) {
	words := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		words = append(words, string(a))
	}
	p, err := parsePolicy(string(args[2]), words)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	s.pol.write.Lock()
	defer s.pol.write.Unlock()
	if st := s.cfg.Policies; st != nil {
		if err := st.Put(p.name, []byte(strings.Join(p.def, " "))); err != nil {
			s.log.Error("saving a policy failed", "policy", p.name, "err", err)
			c.conn.WriteError("ERR policy not saved: " + err.Error())
			return
		}
	}
	s.pol.mu.Lock()
	s.pol.byName[p.name] = p
	s.pol.mu.Unlock()
	c.conn.WriteString("OK")
}

func cmdPolicyGet(s *Server, c *client, args [][]byte) {
	p := s.policy(args[2])
	if p == nil {
		writeNull(c)
		return
	}
	writeList(c, p.def)
}

// cmdPolicyDel deletes a policy. Its rules' state stays until it expires.
func cmdPolicyDel(s *Server, c *client, args [][]byte) {
	name := string(args[2])
	s.pol.write.Lock()
	defer s.pol.write.Unlock()
	if s.policy(args[2]) == nil {
		c.conn.WriteInt64(0)
		return
	}
	if st := s.cfg.Policies; st != nil {
		if _, err := st.Delete(name); err != nil {
			c.conn.WriteError("ERR policy not deleted: " + err.Error())
			return
		}
	}
	s.pol.mu.Lock()
	delete(s.pol.byName, name)
	s.pol.mu.Unlock()
	c.conn.WriteInt64(1)
}

func cmdPolicyList(s *Server, c *client, args [][]byte) {
	s.pol.mu.RLock()
	names := make([]string, 0, len(s.pol.byName))
	for n := range s.pol.byName {
		names = append(names, n)
	}
	s.pol.mu.RUnlock()
	slices.Sort(names)
	writeList(c, names)
}

func cmdPolicyHelp(s *Server, c *client, args [][]byte) {
	writeHelp(c, policyCommands()[0])
}

// policy returns the policy called name, or nil.
func (s *Server) policy(name []byte) *policy {
	s.pol.mu.RLock()
	defer s.pol.mu.RUnlock()
	return s.pol.byName[string(name)]
}

// ruleKeys returns the internal keys of p's rules, and of its penalty if it
// has one, for key. Unlike RL.CHECK's seam it allocates them.
func (p *policy) ruleKeys(key []byte) [][]byte {
	var keys [][]byte
	for i := range p.rules {
		keys = append(keys, shard.PolicyKey(nil, p.name, byte(i), key))
	}
	if p.penalty > 0 {
		keys = append(keys, shard.PolicyKey(nil, p.name, shard.PenaltyRule, key))
	}
	return keys
}

// appendRuleKey appends the internal key of policy's rule for key to buf and
// returns buf and the key, capped so that later appends never touch it.
func appendRuleKey(buf []byte, policy string, rule byte, key []byte) ([]byte, []byte) {
	start := len(buf)
	buf = shard.PolicyKey(buf, policy, rule, key)
	return buf, buf[start:len(buf):len(buf)]
}

// binding returns the decision RL.CHECK replies with and its rule's index.
// Denied: the denying rule with the longest wait (never is longest).
// Admitted: the rule with the least remaining, with the longest delay any
// admitting rule asks for (a LEAKY rule's turn). During a penalty, left, the
// key is denied outright and waits at least until the penalty ends.
func binding(ds []window.Decision, left time.Duration) (window.Decision, int) {
	deny, least, delay := -1, 0, time.Duration(0)
	for i, d := range ds {
		switch {
		case !d.Allowed && (deny < 0 || longer(d.Wait, ds[deny].Wait)):
			deny = i
		case d.Remaining < ds[least].Remaining:
			least = i
		}
		if d.Allowed {
			delay = max(delay, d.Wait)
		}
	}
	if deny < 0 {
		d := ds[least]
		d.Wait = delay
		if left > 0 {
			d.Allowed, d.Wait = false, left
		}
		return d, least
	}
	d := ds[deny]
	if left > 0 && d.Wait != window.Never {
		d.Wait = max(d.Wait, left)
	}
	return d, deny
}

// longer reports whether wait a is longer than b, where Never is longest.
func longer(a, b time.Duration) bool {
	switch {
	case b == window.Never:
		return false
	case a == window.Never:
		return true
	}
	return a > b
}
