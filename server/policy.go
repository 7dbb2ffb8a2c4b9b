package server

import (
	"fmt"
	"slices"
	"sync"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
)

// policies holds the parsed policies. RL.CHECK reads them under a read lock;
// RL.POLICY SET and DEL write the durable store and then the map, under
// write, so that the two never disagree on the order of changes.
type policies struct {
	write  sync.Mutex   // serialises changes: store first, then byName
	mu     sync.RWMutex // guards byName and stats
	byName map[string]*policy.Policy
	stats  map[string]*decide.PolicyStats // counters of each policy in byName, for /metrics
}

// policyCommands is RL.POLICY (docs/commands.md, Policies); RL.CHECK is a decision command.
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
	s.pol.byName = map[string]*policy.Policy{}
	s.pol.stats = map[string]*decide.PolicyStats{}
	if s.cfg.Policies == nil {
		return nil
	}
	pols, err := s.cfg.Policies.Load()
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	for _, p := range pols {
		s.pol.byName[p.Name] = p
		s.chargeLoaded(p)
		s.pol.stats[p.Name] = new(decide.PolicyStats)
	}
	return nil
}

// cmdPolicySet is RL.POLICY SET name rule [rule …] [PENALTY d] [SHADOW]. It
// replies +OK only once the policy is durable (fsynced), when the server has
// a policy store.
func cmdPolicySet(s *Server, c *client, args [][]byte) {
	words := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		words = append(words, string(a))
	}
	p, err := policy.Parse(string(args[2]), words)
	if err != nil {
		c.conn.WriteError(err.Error())
		return
	}
	s.pol.write.Lock()
	defer s.pol.write.Unlock()
	old := s.policy(args[2])
	if reply := s.admitPolicyLocked(p, old); reply != "" {
		c.conn.WriteError(reply)
		return
	}
	if st := s.cfg.Policies; st != nil {
		if err := st.Save(p); err != nil {
			s.cfg.Store.Charge(policyBytes(old) - policyBytes(p))
			s.log.Error("saving a policy failed", "policy", p.Name, "err", err)
			c.conn.WriteError("ERR policy not saved: " + err.Error())
			return
		}
	}
	s.pol.mu.Lock()
	s.pol.byName[p.Name] = p
	if s.pol.stats[p.Name] == nil { // a redefinition keeps counting where it was
		s.pol.stats[p.Name] = new(decide.PolicyStats)
	}
	s.pol.mu.Unlock()
	s.policyChanged(p.Name, p.Encode(), false)
	c.conn.WriteString("OK")
}

func cmdPolicyGet(s *Server, c *client, args [][]byte) {
	p := s.policy(args[2])
	if p == nil {
		c.Null()
		return
	}
	core.WriteValue(&c.Session, p.Definition())
}

// cmdPolicyDel deletes a policy. Its rules' state stays until it expires.
func cmdPolicyDel(s *Server, c *client, args [][]byte) {
	name := string(args[2])
	s.pol.write.Lock()
	defer s.pol.write.Unlock()
	old := s.policy(args[2])
	if old == nil {
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
	delete(s.pol.stats, name)
	s.pol.mu.Unlock()
	s.cfg.Store.Charge(-policyBytes(old))
	s.policyChanged(name, "", true)
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
	core.WriteValue(&c.Session, names)
}

func cmdPolicyHelp(s *Server, c *client, args [][]byte) {
	writeHelp(c, policyCommands()[0])
}

// policy returns the policy called name, or nil.
func (s *Server) policy(name []byte) *policy.Policy {
	s.pol.mu.RLock()
	defer s.pol.mu.RUnlock()
	return s.pol.byName[string(name)]
}

// policyWithStats returns the policy called name and its counters, or nils.
func (s *Server) policyWithStats(name []byte) (*policy.Policy, *decide.PolicyStats) {
	s.pol.mu.RLock()
	defer s.pol.mu.RUnlock()
	return s.pol.byName[string(name)], s.pol.stats[string(name)]
}
