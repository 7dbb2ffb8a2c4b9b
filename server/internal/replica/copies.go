package replica

import (
	"errors"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/shard"
)

// The backup's side: copies arrive with RL.PEER COPY and RL.PEER SYNC
// into Config.Copies, a Map of their own that no command reads.

// Stream is a peer connection's replica state, which only this package
// reaches: the session keeps one per connection.
type Stream struct {
	// synced says RL.PEER SYNC has come on this connection: a primary's
	// stream of shipments starts with a full sync (see shipment).
	synced bool
	peer   string // the primary whose full sync came on it
	gen    uint64 // which of that primary's full syncs here it was (see syncGens)
}

// Replies of the backup's side.
const (
	// ErrResync refuses a shipment on a connection no full sync came on.
	ErrResync = "RESYNC no full sync on this connection yet"
	errSyntax = "ERR syntax error"
	// errPeerAuth is what a node from before deltas answers RL.PEER DELTA
	// with, and one from before backed the longer SYNC.
	errPeerAuth = cluster.PeerRefused
)

// PeerCopy is RL.PEER COPY payload: entries (persistence.AppendEntries)
// to keep as copies; a tombstone deletes a copy. They are imported a batch
// at a time, each shard's run of them under one lock: a backup imports
// about as many keys as its primaries decide.
func (r *Replicator) PeerCopy(w resp.Writer, st *Stream, payload []byte) {
	if !r.shipment(w, st) {
		return
	}
	if _, err := r.importCopies(payload, false); err != nil {
		w.WriteError("ERR bad shipment: " + err.Error())
		return
	}
	w.WriteString("OK")
}

// PeerDelta is RL.PEER DELTA payload: PeerCopy for a payload that may hold
// deltas (persistence.AppendDeltaChunks), each completed from the copy of
// its key. It replies OK, or the keys whose deltas no copy could complete
// (their copies stay as they were), which the primary then ships whole.
func (r *Replicator) PeerDelta(w resp.Writer, st *Stream, payload []byte) {
	if !r.shipment(w, st) {
		return
	}
	missed, err := r.importCopies(payload, true)
	switch {
	case err != nil:
		w.WriteError("ERR bad shipment: " + err.Error())
	case len(missed) == 0:
		w.WriteString("OK")
	default:
		r.missed.Add(int64(len(missed)))
		w.WriteArray(len(missed))
		for _, k := range missed {
			w.WriteBulk(k)
		}
	}
}

// importCopies imports a shipment's entries into the copies, and returns
// the keys of the deltas that could not be completed, which point into
// payload.
func (r *Replicator) importCopies(payload []byte, deltas bool) ([][]byte, error) {
	r.received.Add(int64(len(payload)))
	now := r.d.UnixNano()
	d, _ := r.decoders.Get().(*persistence.Decoder)
	if d == nil {
		d = new(persistence.Decoder)
	}
	defer r.decoders.Put(d)
	d.Deltas = deltas
	var missed [][]byte
	_, err := d.Decode(payload, func(es []shard.Entry) error {
		for len(es) > 0 {
			n, err := r.cfg.Copies.ImportBatch(es, now)
			if err == nil {
				break
			}
			if errors.Is(err, shard.ErrDelta) {
				missed = append(missed, es[n].Key)
			} else {
				r.copyErrs.Add(1) // the copies map is full (--maxmemory): this key is not backed up
			}
			es = es[n+1:]
		}
		return nil
	})
	return missed, err
}

// PeerSync is RL.PEER SYNC drop [backed [ENDS [LOST holder bitmap ...]]], from the node peer: drop every copy of the slots
// set in the drop bitmap, before a full sync's keys arrive; those of the
// backed bitmap follow (see noteSync), and count as held from the SYNC
// on, or with ENDS only once RL.PEER SYNCED ends the sync (PeerSynced).
// A node that predates backed sends drop alone, and one that predates
// ENDS no end. LOST names the slots peer has lost (see LostAt).
func (r *Replicator) PeerSync(w resp.Writer, st *Stream, peer string, bitmaps [][]byte) {
	bitmap := bitmaps[0]
	var backed []byte
	if len(bitmaps) >= 2 {
		backed = bitmaps[1]
	}
	ends := len(bitmaps) >= 3
	var lost [][]byte
	if len(bitmaps) > 3 {
		lost = bitmaps[3:]
	}
	if len(bitmap) != cluster.Slots/8 || backed != nil && len(backed) != cluster.Slots/8 ||
		ends && !cluster.IsWord(bitmaps[2], cluster.PeerSyncEnds) || !lostForm(lost) {
		w.WriteError(errSyntax)
		return
	}
	r.seedMu.Lock() // a seed's import never runs between the drop and the note: see Seed
	r.dropCopies(func(slot int) bool { return bitmap[slot/8]&(1<<(slot%8)) != 0 })
	if lost != nil {
		r.noteLost(peer, lost[1:])
	}
	st.synced, st.peer, st.gen = true, peer, r.syncGens.next(peer)
	if ends {
		r.notePending(peer, st.gen, bitmap, backed)
	} else {
		r.noteSync(peer, bitmap, backed)
	}
	r.seedMu.Unlock()
	w.WriteString("OK")
}

// HoldDrops holds off full syncs' drops (and seeds) until the returned
// release is called: a table change's hooks run between. They decide
// which slots gained from a dead owner are lost by whether this node holds
// their copies (HeldBy), and then promote those copies; a drop between
// the two left a slot not lost with its copies gone, taken over from
// nothing, and handed back in mode replace over the owner's newer keys
// (CI's TestSplitTwoOfFive: an owner full synced its backups at a heal
// just as they confirmed its death; both promoted no key). A drop before
// the switch makes the slots lost; one after it drops copies already
// promoted.
func (r *Replicator) HoldDrops() (release func()) {
	r.seedMu.Lock()
	return r.seedMu.Unlock
}

// lostForm reports whether args, SYNC's arguments after ENDS, are none,
// or LOST and holder and bitmap pairs.
func lostForm(args [][]byte) bool {
	if len(args) == 0 {
		return true
	}
	if len(args) < 3 || len(args)%2 == 0 || !cluster.IsWord(args[0], cluster.PeerSyncLost) {
		return false
	}
	for i := 2; i < len(args); i += 2 {
		if len(args[i]) != cluster.Slots/8 {
			return false
		}
	}
	return true
}

// PeerSynced is RL.PEER SYNCED bytes: the full sync on this connection
// has sent every key (bytes of them, which only a log would want); the slots its SYNC named as backed count as held from
// now on. A connection whose SYNC is no longer its primary's latest, or
// had no ENDS, is refused (-RESYNC): the primary starts over.
func (r *Replicator) PeerSynced(w resp.Writer, st *Stream) {
	if !st.synced || !r.synced(st.peer, st.gen) {
		w.WriteError(ErrResync)
		return
	}
	w.WriteString("OK")
}

// shipment reports whether the connection of st may ship copies, and refuses them with
// -RESYNC if not: only once a full sync (RL.PEER SYNC) has come on the
// same connection. A primary ships to a backup on one connection, so one
// that reaches this node on a new connection may be talking to a new
// process: a backup that restarted sooner than failure detection notices
// holds no copies, and deltas would bring back only the keys that change.
// The refusal makes the primary start over with a full sync.
//
// A connection whose primary has since sent a full sync on another one is
// refused too: the primary gave its shipments on it up (a timeout), yet
// the network may still deliver them, late, after the newer full sync
// (TCP retransmits what a link cut held once it heals), and they would
// put older states back over the copies. Its primary moved on already.
func (r *Replicator) shipment(w resp.Writer, st *Stream) bool {
	if !st.synced || st.peer != "" && !r.syncGens.latest(st.peer, st.gen) {
		w.WriteError(ErrResync)
		return false
	}
	return true
}

// dropCopies deletes the copies whose slot in picks.
func (r *Replicator) dropCopies(in func(slot int) bool) int {
	cp := r.cfg.Copies
	var es []shard.Entry
	n := 0
	r.forgetSyncs(in)
	for i := range cp.Shards() {
		es = cp.ExportShardFunc(i, func(k []byte) bool { return in(cluster.Slot(policy.Route(k))) }, es[:0])
		for _, e := range es {
			if cp.Delete(e.Key) {
				n++
			}
		}
	}
	return n
}

// promote moves into the store the copies of the slots this node owns in
// v's table but not in old, whose owner has gone: the runner-up of a slot
// is the node that takes it over, and holds its copy. The copy replaces
// what this node may have decided meanwhile for a dead owner's key (a
// fresh quota under --owner-unreachable local); for an owner that left,
// whose handoff may have brought newer state, it only fills keys that
// are missing. A slot this node was handing to the owner that has gone,
// with no DONE sent, is not taken over but kept (Delegate.Handing): its
// copies are older than its keys here, which no node served after (the
// simulation's seed 527 at an import wait of 1 s: n3 had imported slot
// 11822 from n1, taking n1's shipments of it as copies meanwhile, and
// served it to 103; the table gave it to n1, cut off, and n1's death gave
// it back before n3's handoff went: n3 promoted the copies, 87).
func (r *Replicator) promote(old *cluster.Table, v *cluster.View) {
	nt := v.Table
	takes := make([]int8, cluster.Slots) // 0: not taken over; 1: fill missing keys; 2: replace
	any := false
	for s := range cluster.Slots {
		was := old.Owner(s).Name
		if nt.Owner(s).Name != r.self || was == r.self || nt.Has(was) || r.d.Handing(s) {
			continue
		}
		takes[s] = 1
		if died(v, was) {
			takes[s] = 2
		}
		any = true
	}
	if !any {
		return
	}
	start := time.Now()
	cp, store, now := r.cfg.Copies, r.store, r.d.UnixNano()
	var es []shard.Entry
	n := 0
	for i := range cp.Shards() {
		es = cp.ExportShardFunc(i, func(k []byte) bool { return takes[cluster.Slot(policy.Route(k))] != 0 }, es[:0])
		for _, e := range es {
			if takes[cluster.Slot(policy.Route(e.Key))] == 1 {
				if _, ok := store.Lookup(e.Key, policy.Route(e.Key)); ok {
					cp.Delete(e.Key)
					continue
				}
			}
			e.Route = policy.Route(e.Key)
			if err := store.Import(e, now); err == nil {
				n++
			}
			cp.Delete(e.Key)
		}
	}
	r.promoted.Add(int64(n))
	r.log.Info("replicas: promoted copies of the slots taken over", "keys", n, "took", time.Since(start).Round(time.Microsecond))
}

// died reports whether v says name died, rather than left or is leaving.
func died(v *cluster.View, name string) bool {
	if m, ok := v.Member(name); ok {
		return m.State != cluster.StateLeaving
	}
	for _, m := range v.Gone {
		if m.Name == name {
			return m.State == cluster.StateDead
		}
	}
	return true // gone before this view: nothing says it handed its slots over
}

// dropStale deletes the copies of slots this node neither backs up nor
// owns in t: their primary ships them elsewhere now.
func (r *Replicator) dropStale(t *cluster.Table) {
	r.dropCopies(func(s int) bool {
		if t.Owner(s).Name == r.self {
			return true // promoted already, or handed over by a live owner
		}
		b, ok := t.RunnerUp(s)
		return !ok || b.Name != r.self
	})
}

// Copies is the map the copies are kept in (Config.Copies).
func (r *Replicator) Copies() *shard.Map { return r.cfg.Copies }

// Feed is the feed of the store's changes (Config.Feed).
func (r *Replicator) Feed() *persistence.Feed { return r.cfg.Feed }

// KeepHanded keeps as copies the keys of the slots this node has just
// handed over (see Server.cut) and now backs up in v, the routing view. After a join a slot's old
// owner is its runner-up, so what it handed over is the new owner's backup
// copy at once; without it, the slot had no copy until the new owner's
// full sync, and a death of the new owner meanwhile reset its keys. The
// full sync, which replaces these copies, still follows. A key that has a
// copy already keeps it: after a flap the owner, which kept its own newer
// keys, may have shipped them here before this cut
// (TestFlapKeepsTheOwnersKeys).
func (r *Replicator) KeepHanded(v *cluster.View, slots []int) {
	var keep []int
	for _, slot := range slots {
		if b, ok := v.Table.RunnerUp(slot); ok && b.Name == v.Self && v.Table.Owner(slot).Name != v.Self {
			keep = append(keep, slot)
		}
	}
	if len(keep) == 0 {
		return
	}
	r.noteKept(v.Table, keep)
	in := SlotSet(keep)
	store, now := r.store, r.d.UnixNano()
	var es []shard.Entry
	for i := range store.Shards() {
		es = store.ExportShardFunc(i, in.KeyIn, es[:0])
		for _, e := range es {
			e.Route = routeOf(e.Key)
			if _, err := r.cfg.Copies.ImportMissing(e, now); err != nil {
				r.copyErrs.Add(1) // the copies map is full (--maxmemory)
			}
		}
	}
}
