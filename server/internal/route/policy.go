package route

import (
	"encoding/json"
	"sync"
	"time"
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

// OnTaken makes every merge, for a test, run f between taking a version
// (its writer's clock, at) and applying it: a test holds a merge there.
func (rt *Router) OnTaken(f func(name string, at int64)) {
	rt.pols.taken = func(v policyVersion) { f(v.Name, v.At) }
}

// PolicyChanged records a change made on this node and broadcasts it.
func (rt *Router) PolicyChanged(name, def string, deleted bool) {
	if !rt.on {
		return
	}
	v := policyVersion{Name: name, At: time.Now().UnixNano(), Node: rt.ho.View().Self, Def: def, Deleted: deleted}
	rt.pols.mu.Lock()
	if rt.pols.by == nil {
		rt.pols.by = map[string]policyVersion{}
	}
	rt.pols.by[name] = v
	rt.pols.mu.Unlock()
	if b := rt.cfg.Broadcast; b != nil {
		msg, _ := json.Marshal([]policyVersion{v})
		b(msg)
	}
}

// LocalState is every policy version this node holds, for a push/pull
// exchange. With MergeState it makes the server a cluster.StateSync.
func (rt *Router) LocalState() []byte {
	if !rt.on {
		return nil
	}
	rt.pols.mu.Lock()
	vs := make([]policyVersion, 0, len(rt.pols.by))
	for _, v := range rt.pols.by {
		vs = append(vs, v)
	}
	rt.pols.mu.Unlock()
	b, _ := json.Marshal(vs)
	return b
}

// Merge applies the versions in b that are newer than this node's, each
// through Policies.ApplyRemote while it is still the one recorded: merges
// run on goroutines of their own (the front's asyncState), so a newer
// version, or a local change, may have been recorded and applied since
// this one was taken.
func (rt *Router) Merge(b []byte) {
	var vs []policyVersion
	if !rt.on || json.Unmarshal(b, &vs) != nil {
		return
	}
	for _, v := range vs {
		if rt.takeVersion(v) {
			if h := rt.pols.taken; h != nil {
				h(v)
			}
			rt.apply.ApplyRemote(v.Name, v.Def, v.Deleted, func() bool { return rt.isVersion(v) })
		}
	}
}

// takeVersion records v if it is newer than what this node holds.
func (rt *Router) takeVersion(v policyVersion) bool {
	rt.pols.mu.Lock()
	defer rt.pols.mu.Unlock()
	if rt.pols.by == nil {
		rt.pols.by = map[string]policyVersion{}
	}
	if old, ok := rt.pols.by[v.Name]; ok && !v.newer(old) {
		return false
	}
	rt.pols.by[v.Name] = v
	return true
}

// isVersion reports whether v is the version recorded for its policy.
func (rt *Router) isVersion(v policyVersion) bool {
	rt.pols.mu.Lock()
	defer rt.pols.mu.Unlock()
	return rt.pols.by[v.Name] == v
}
