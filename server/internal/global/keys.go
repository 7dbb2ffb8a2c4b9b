package global

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// A global key is in the key store too, holding the units this region
// admitted of it (region/keyspace.go): DEL, EXISTS, TYPE, TTL, SCAN,
// DBSIZE, --max-keys, --maxmemory, snapshots and the log see it as any
// other key. The region table decides; the key store's copy is made on a
// key's first admission (so that a full store refuses it with -OOM) and
// follows every sync after that. Both happen under rn.mu, as DEL's and
// FLUSHALL's forgetting does, so a copy never outlives its deletion.

// keepFreshLocked keeps the key store's copy of a key the region table did
// not hold before this decision: a denied first request leaves nothing,
// and one the key store refuses (another algorithm's key, or a full store)
// is undone and refused as a local key would be.
func (rn *Node) keepFreshLocked(key []byte, lim region.Limit, allowed bool, now int64) error {
	if !allowed {
		rn.st.Drop(key)
		return nil
	}
	if inf, ok := rn.store.Get(key, now); ok && inf.Expiry > now && inf.Params.Kind != lim.Kind {
		rn.st.Drop(key)
		return shard.ErrWrongType
	}
	o, _ := rn.st.OwnOf(key)
	if err := rn.store.Import(ownEntry(key, &o), now); err != nil {
		rn.st.Drop(key)
		return err
	}
	return nil
}

// ownEntry is o as the key store's entry of key.
func ownEntry(key []byte, o *region.Own) shard.Entry {
	return shard.Entry{Key: key, Params: o.Params, State: o.State, Counters: o.Counters, Route: policy.Route(key)}
}

// mirrorLocked copies the own units that changed since the last sync into
// the key store. A copy the store no longer has room for (it expired and
// was freed, and the store is full) is left out: the region table still
// counts the units.
func (rn *Node) mirrorLocked(now int64) {
	rn.own = rn.st.DrainOwn(rn.own[:0])
	for i := range rn.own {
		o := &rn.own[i]
		if err := rn.store.Import(ownEntry([]byte(o.Key), o), now); err != nil {
			rn.mirrorFailed.Add(1)
		}
	}
	clear(rn.own)
}

// restore takes back the own units of the global keys the key store holds
// at start, loaded from a snapshot and the log: when every region restarts
// together, no other region can echo them.
func (rn *Node) restore() int {
	var es []shard.Entry
	n := 0
	for i := range rn.store.Shards() {
		es = rn.store.ExportShard(i, es[:0])
		for _, e := range es {
			k := e.Params.Kind
			global := rn.Global(e.Key)
			if policy.Reserved(e.Key) {
				global = rn.RuleGlobal(e.Key) // policy.go
			}
			if (k != window.KindSlide && k != window.KindFixed) || !global {
				continue
			}
			rn.mu.Lock() // the sync loop runs already
			if rn.st.Restore(region.Own{Key: string(e.Key), Params: e.Params, State: e.State, Counters: e.Counters}) {
				n++
			}
			rn.chargeLocked()
			rn.mu.Unlock()
		}
	}
	return n
}

// Forget drops what this region admitted of key, if global, before DEL
// deletes its copy.
func (rn *Node) Forget(key []byte) {
	if rn.Global(key) {
		rn.mu.Lock()
		rn.st.Forget(key)
		rn.chargeLocked()
		rn.mu.Unlock()
	}
}

// ForgetAll drops what this region admitted of every key, before FLUSHALL.
func (rn *Node) ForgetAll() {
	rn.mu.Lock()
	rn.st.ForgetAll()
	rn.chargeLocked()
	rn.mu.Unlock()
}

// Syncs returns how many syncs have run.
func (rn *Node) Syncs() int64 { return rn.synced.Load() }

// RefusedGlobal reports whether a command that changes a key's state in
// the key store directly (RL.RESERVE, RL.REFUND, RL.ACQUIRE) must be
// refused on key: on a global key that would admit units, or give them
// back, behind the other regions' backs (and the next sync would overwrite
// them). RL.RESERVE with a POLICY is the policy's, per region as RL.CHECK.
func (rn *Node) RefusedGlobal(key []byte) bool {
	return !policy.Reserved(key) && rn.Global(key)
}

// ErrRefusedGlobal is RefusedGlobal's reply for cmd.
func ErrRefusedGlobal(cmd string) string {
	return "ERR " + cmd + " cannot be global; use RL.SLIDE or RL.FIXED, or mark the key LOCAL"
}
