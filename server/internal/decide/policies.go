package decide

import (
	"log/slog"
	"slices"
	"sync"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
)

// Policies holds the named policies RL.CHECK decides with, and their
// counters. RL.CHECK reads them under a read lock; RL.POLICY SET and DEL
// write the durable store and then the map, under the change lock (Lock),
// so that the two never disagree on the order of changes. Make it with
// NewPolicies; it is safe for concurrent use.
type Policies struct {
	cfg    PolicyConfig
	write  sync.Mutex   // serialises changes: store first, then byName (Lock)
	mu     sync.RWMutex // guards byName and stats
	byName map[string]*policy.Policy
	stats  map[string]*PolicyStats // counters of each policy in byName, for /metrics
}

// PolicyConfig is what the policies need of the server.
type PolicyConfig struct {
	Store   *shard.Map            // charged each policy's bytes, under --maxmemory
	Durable *persistence.Policies // where RL.POLICY SET makes policies durable; nil keeps them in memory only
	Max     int                   // --max-policies: RL.POLICY SET of a new policy beyond it is refused
	Logger  *slog.Logger
	// Changed, if set, is told of each change RL.POLICY made (def is the
	// policy's encoding; "" for a deletion), under the change lock: a
	// cluster broadcasts it.
	Changed func(name, def string, deleted bool)
}

// NewPolicies returns no policies, kept as cfg says.
func NewPolicies(cfg PolicyConfig) *Policies {
	return &Policies{cfg: cfg, byName: map[string]*policy.Policy{}, stats: map[string]*PolicyStats{}}
}

// Commands is RL.POLICY (docs/commands.md, Policies); RL.CHECK is a decision command.
func (ps *Policies) Commands() []core.Command {
	return []core.Command{
		{Name: "rl.policy", Arity: -2, Group: "rl", Summary: "Defines named, durable, multi-rule policies", Subs: []core.Command{
			{Name: "set", Arity: -5, Flags: core.FlagWrite, Run: ps.set, Summary: "Defines or redefines a policy; +OK once it is durable"},
			{Name: "get", Arity: 3, Run: ps.get, Summary: "Returns a policy's definition"},
			{Name: "del", Arity: 3, Flags: core.FlagWrite, Run: ps.del, Summary: "Deletes a policy"},
			{Name: "list", Arity: 2, Run: ps.list, Summary: "Lists the policies' names"},
			{Name: "help", Arity: 2, Run: ps.help, Summary: "Lists RL.POLICY's subcommands"},
		}},
	}
}

// Load reads every policy of the durable store, if there is one.
func (ps *Policies) Load() error {
	if ps.cfg.Durable == nil {
		return nil
	}
	pols, err := ps.cfg.Durable.Load()
	if err != nil {
		return err
	}
	for _, p := range pols {
		ps.byName[p.Name] = p
		ps.chargeLoaded(p)
		ps.stats[p.Name] = new(PolicyStats)
	}
	return nil
}

// set is RL.POLICY SET name rule [rule …] [PENALTY d] [SHADOW]. It
// replies +OK only once the policy is durable (fsynced), when the server has
// a policy store.
func (ps *Policies) set(x *core.Session, args [][]byte) {
	words := make([]string, 0, len(args)-3)
	for _, a := range args[3:] {
		words = append(words, string(a))
	}
	p, err := policy.Parse(string(args[2]), words)
	if err != nil {
		x.Out.WriteError(err.Error())
		return
	}
	ps.write.Lock()
	defer ps.write.Unlock()
	old := ps.Get(args[2])
	if reply := ps.admitLocked(p, old); reply != "" {
		x.Out.WriteError(reply)
		return
	}
	if st := ps.cfg.Durable; st != nil {
		if err := st.Save(p); err != nil {
			ps.cfg.Store.Charge(PolicyBytes(old) - PolicyBytes(p))
			ps.cfg.Logger.Error("saving a policy failed", "policy", p.Name, "err", err)
			x.Out.WriteError("ERR policy not saved: " + err.Error())
			return
		}
	}
	ps.mu.Lock()
	ps.byName[p.Name] = p
	if ps.stats[p.Name] == nil { // a redefinition keeps counting where it was
		ps.stats[p.Name] = new(PolicyStats)
	}
	ps.mu.Unlock()
	ps.changed(p.Name, p.Encode(), false)
	x.Out.WriteString("OK")
}

func (ps *Policies) get(x *core.Session, args [][]byte) {
	p := ps.Get(args[2])
	if p == nil {
		x.Null()
		return
	}
	core.WriteValue(x, p.Definition())
}

// del deletes a policy. Its rules' state stays until it expires.
func (ps *Policies) del(x *core.Session, args [][]byte) {
	name := string(args[2])
	ps.write.Lock()
	defer ps.write.Unlock()
	old := ps.Get(args[2])
	if old == nil {
		x.Out.WriteInt64(0)
		return
	}
	if st := ps.cfg.Durable; st != nil {
		if _, err := st.Delete(name); err != nil {
			x.Out.WriteError("ERR policy not deleted: " + err.Error())
			return
		}
	}
	ps.mu.Lock()
	delete(ps.byName, name)
	delete(ps.stats, name)
	ps.mu.Unlock()
	ps.cfg.Store.Charge(-PolicyBytes(old))
	ps.changed(name, "", true)
	x.Out.WriteInt64(1)
}

func (ps *Policies) list(x *core.Session, _ [][]byte) {
	ps.mu.RLock()
	names := make([]string, 0, len(ps.byName))
	for n := range ps.byName {
		names = append(names, n)
	}
	ps.mu.RUnlock()
	slices.Sort(names)
	core.WriteValue(x, names)
}

func (ps *Policies) help(x *core.Session, _ [][]byte) { core.WriteHelp(x, &ps.Commands()[0]) }

// changed tells the server of a change RL.POLICY made.
func (ps *Policies) changed(name, def string, deleted bool) {
	if ps.cfg.Changed != nil {
		ps.cfg.Changed(name, def, deleted)
	}
}

// Get returns the policy called name, or nil.
func (ps *Policies) Get(name []byte) *policy.Policy {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.byName[string(name)]
}

// WithStats returns the policy called name and its counters, or nils.
func (ps *Policies) WithStats(name []byte) (*policy.Policy, *PolicyStats) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	return ps.byName[string(name)], ps.stats[string(name)]
}

// Each calls f with every policy that has counters, under the read lock,
// in no order; p is nil for one whose counters outlived it.
func (ps *Policies) Each(f func(name string, p *policy.Policy, st *PolicyStats)) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	for name, st := range ps.stats {
		f(name, ps.byName[name], st)
	}
}

// Lock takes the change lock, for a change that is not RL.POLICY's (a
// peer's): a policy changes in the durable store and then the map under
// it, one change at a time.
func (ps *Policies) Lock() { ps.write.Lock() }

// Unlock releases the change lock.
func (ps *Policies) Unlock() { ps.write.Unlock() }

// SetLocked makes p the policy of its name, keeping its counters as they
// are. Call with the change lock held.
func (ps *Policies) SetLocked(p *policy.Policy) {
	ps.mu.Lock()
	ps.byName[p.Name] = p
	ps.mu.Unlock()
}

// DeleteLocked forgets the policy called name, keeping its counters as
// they are. Call with the change lock held.
func (ps *Policies) DeleteLocked(name string) {
	ps.mu.Lock()
	delete(ps.byName, name)
	ps.mu.Unlock()
}
