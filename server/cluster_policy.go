package server

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/decide"
)

// Policies reach every node of a cluster, last writer wins: each change
// carries a version (the writer's clock, then its node name to break
// ties), goes out by gossip broadcast at once, and a full exchange of
// every version (memberlist's push/pull) repairs what a broadcast missed.
// A deletion is kept as a tombstone so that an older definition cannot
// come back. Versions live in memory: a node that restarts takes its
// persisted policies at version zero, so any change made elsewhere wins.

// policyVersion is one policy's last change.
type policyVersion struct {
	Name    string `json:"n"`
	At      int64  `json:"v"` // unix nanoseconds at the writer
	Node    string `json:"o"`
	Def     string `json:"d,omitempty"`
	Deleted bool   `json:"x,omitempty"`
}

func (a policyVersion) newer(b policyVersion) bool {
	return a.At > b.At || (a.At == b.At && a.Node > b.Node)
}

// policyVersions is a node's record of the versions it holds.
type policyVersions struct {
	mu sync.Mutex // guards by
	by map[string]policyVersion
	// taken, if set, runs between a merge taking a version and applying
	// it: a test holds a merge there.
	taken func(policyVersion)
}

// policyChanged records a change made on this node and broadcasts it.
func (s *Server) policyChanged(name, def string, deleted bool) {
	if s.cl == nil {
		return
	}
	v := policyVersion{Name: name, At: time.Now().UnixNano(), Node: s.cl.view().Self, Def: def, Deleted: deleted}
	s.cl.pols.mu.Lock()
	if s.cl.pols.by == nil {
		s.cl.pols.by = map[string]policyVersion{}
	}
	s.cl.pols.by[name] = v
	s.cl.pols.mu.Unlock()
	if b := s.cl.cfg.Broadcast; b != nil {
		msg, _ := json.Marshal([]policyVersion{v})
		b(msg)
	}
}

// LocalState is every policy version this node holds, for a push/pull
// exchange. With MergeState it makes the server a cluster.StateSync.
func (s *Server) LocalState() []byte {
	if s.cl == nil {
		return nil
	}
	s.cl.pols.mu.Lock()
	vs := make([]policyVersion, 0, len(s.cl.pols.by))
	for _, v := range s.cl.pols.by {
		vs = append(vs, v)
	}
	s.cl.pols.mu.Unlock()
	b, _ := json.Marshal(vs)
	return b
}

// Merge applies the versions in b that are newer than this node's.
func (s *Server) Merge(b []byte) {
	var vs []policyVersion
	if s.cl == nil || json.Unmarshal(b, &vs) != nil {
		return
	}
	for _, v := range vs {
		if s.takeVersion(v) {
			if h := s.cl.pols.taken; h != nil {
				h(v)
			}
			s.applyRemotePolicy(v)
		}
	}
}

// takeVersion records v if it is newer than what this node holds.
func (s *Server) takeVersion(v policyVersion) bool {
	s.cl.pols.mu.Lock()
	defer s.cl.pols.mu.Unlock()
	if s.cl.pols.by == nil {
		s.cl.pols.by = map[string]policyVersion{}
	}
	if old, ok := s.cl.pols.by[v.Name]; ok && !v.newer(old) {
		return false
	}
	s.cl.pols.by[v.Name] = v
	return true
}

// applyRemotePolicy makes another node's change here, durable as a local one.
// Merges run on goroutines of their own (asyncState), so a newer version,
// or a local change, may have been recorded and applied since this one
// was taken: it is applied only while it is still the recorded one, under
// the write lock that every change of a policy takes, so the last applied
// is the newest.
func (s *Server) applyRemotePolicy(v policyVersion) {
	s.pol.Lock()
	defer s.pol.Unlock()
	if !s.isVersion(v) {
		return
	}
	old := s.pol.Get([]byte(v.Name))
	if v.Deleted {
		if old != nil {
			s.dropPolicyLocked(v.Name, old)
		}
		return
	}
	p, err := policy.Decode(v.Name, v.Def)
	if err != nil {
		s.log.Error("cluster: a peer's policy does not parse here; ignored", "policy", v.Name, "err", err)
		return
	}
	s.cfg.Store.Charge(decide.PolicyBytes(p) - decide.PolicyBytes(old)) // a peer's policy is kept even past the limits, as a loaded one is
	if st := s.cfg.Policies; st != nil {
		if err := st.Save(p); err != nil {
			s.log.Error("cluster: saving a peer's policy failed", "policy", p.Name, "err", err)
		}
	}
	s.pol.SetLocked(p)
}

// isVersion reports whether v is the version recorded for its policy.
func (s *Server) isVersion(v policyVersion) bool {
	s.cl.pols.mu.Lock()
	defer s.cl.pols.mu.Unlock()
	return s.cl.pols.by[v.Name] == v
}

func (s *Server) dropPolicyLocked(name string, old *policy.Policy) {
	if st := s.cfg.Policies; st != nil {
		if _, err := st.Delete(name); err != nil {
			s.log.Error("cluster: deleting a policy a peer deleted failed", "policy", name, "err", err)
		}
	}
	s.pol.DeleteLocked(name)
	s.cfg.Store.Charge(-decide.PolicyBytes(old))
}
