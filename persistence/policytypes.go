package persistence

import (
	"fmt"

	"github.com/rlstore/rlstore/policy"
)

// Save makes pol durable under its name, replacing any policy of that name.
// It returns only once the change is fsynced.
func (p *Policies) Save(pol *policy.Policy) error { return p.Put(pol.Name, []byte(pol.Encode())) }

// Load parses every stored policy. A definition that no longer parses is an
// error naming the policy: the server must not start without one of them.
func (p *Policies) Load() ([]*policy.Policy, error) {
	var out []*policy.Policy
	for _, name := range p.List() {
		def, _ := p.Get(name)
		pol, err := policy.Decode(name, string(def))
		if err != nil {
			return nil, fmt.Errorf("persistence: stored policy %q: %v", name, err)
		}
		out = append(out, pol)
	}
	return out, nil
}
