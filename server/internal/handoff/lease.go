package handoff

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// A node serves a slot only while it can prove it still owns it: while it
// holds its lease (a majority of the known members granted one of its
// requests within a term; see cluster.Lease), and, for a slot it gained
// because its owner was declared dead, once TakeoverWait has passed since
// then, by which time the dead owner's own lease has run out; and, with
// replicas, while the slot's backup has acknowledged its changes up to
// backupLagTerms lease terms ago (replica.Fresh), so that a backup that
// takes the slot over lacks at most that much. Each check is an atomic
// load or two and a compare with the command's time, which the connection
// read anyway. See docs/cluster.md, "Safety".

// backupLagTerms is the replicas' MaxLag in lease terms: how far behind
// its owner a backup may fall while the owner serves the slots it backs
// up, and so the most a promotion may lack of a dead owner's decisions
// when something stopped its shipments first (3 s at lan). One term was
// too short for a backup killed and restarted at once on a loaded host:
// its owners stopped serving before the new process listened
// (TestQuickRestartUnderLoad); three also cover most of a dead backup's
// detection at lan (2-3 s), after which its slots get a new backup.
// Redis's min-replicas-max-lag, the same trade, defaults to 10 s.
const backupLagTerms = 3

// leaseNow is c's command time on the lease's clock.
func (n *Node) leaseNow(x *core.Session) int64 {
	if x.Mark == 0 {
		x.Mark = time.Since(n.started) // run reuses it (the server's batchStart)
	}
	return int64(x.Mark) + n.leaseOff
}

// mayServe reports whether this node may serve slot for c now.
func (n *Node) mayServe(x *core.Session, slot int) bool {
	if n.lease == nil {
		return true
	}
	now := n.leaseNow(x)
	if !n.lease.ServesAt(now) || n.takeover.Load().Waits(slot, now) {
		return false
	}
	return n.repl == nil || n.repl.Fresh(slot, now)
}

// serving reports whether this node holds its lease now: CLUSTER INFO's
// cluster_state.
func (n *Node) serving() bool { return n.lease == nil || n.lease.ServesAt(n.lease.Now()) }

// noteTakeovers marks the slots nv gives this node that old gave to a
// member nv says died: they wait until its lease has run out, at most
// TakeoverWait (cluster.Lease.NextTakeover). The caller holds switchMu.
func (n *Node) noteTakeovers(old, nv *cluster.View) {
	if n.lease != nil {
		n.takeover.Store(n.lease.NextTakeover(n.takeover.Load(), old, nv, n.lease.Now()))
	}
}

// rejoin runs when a member reports that it declared this node dead while
// this node's lease had run out (a pause, or a partition from the
// majority): the others may have served its slots since. Each slot it
// owns then waits, as an import, for the node that served it to hand it
// back (replace, if that node served it: see resume.go), and is
// asked for with RL.PEER PULL; this node keeps its keys, joined with what
// a handback brings (see peerImport), and serves from them if none comes
// within importWait.
func (n *Node) rejoin() {
	n.switchMu.Lock()
	v := n.cur.Load()
	until := time.Now().Add(importWait)
	var slots, pulls []int
	for name, a := range n.ho.died {
		a.rejoined = true // what this node served of the member's slots is older than this death: see backKeeps
		n.ho.died[name] = a
	}
	for slot := range cluster.Slots {
		if st := n.ho.state(slot); st != nil && st.mg != nil {
			// Moving out: another node may have served it since, so this
			// node hands nothing over (see waitLease), and never answers
			// RL.PEER RELEASED that it released it; it keeps the slots'
			// keys for their owner (kept.go).
			st.mg.disowned.Store(true)
			n.ho.forgone[slot/64] |= 1 << (slot % 64)
		}
		ru, ok := v.Table.RunnerUp(slot)
		if !ok || v.Table.Owner(slot).Name != v.Self || n.ho.state(slot) != nil {
			continue
		}
		st := n.rejoinImportLocked(v, slot, ru, until)
		n.ho.set(slot, st)
		slots = append(slots, slot)
		if st.keep { // one it handed on waits for that node's handoff: see holder.go
			pulls = append(pulls, slot)
		}
	}
	n.switchMu.Unlock()
	if n.repl != nil {
		n.repl.ForgetHeld() // its copies are as old as its death
	}
	n.rejoins.Add(1)
	if len(slots) == 0 {
		return
	}
	n.ho.notify()
	go func() { // the lease's caller must not block
		n.ho.running.wait()
		time.AfterFunc(importWait+time.Millisecond, n.expireImports)
		n.log.Warn("cluster: this node was declared dead while it could not serve; waiting for its slots to be handed back",
			"slots", len(slots))
		n.pullImports(v, pulls)
	}()
}

// quorumPairs are RL.CLUSTER INFO's fields about the lease.
func (n *Node) quorumPairs() []core.Pair {
	if n.lease == nil {
		return nil
	}
	left := max(0, time.Duration(n.lease.Deadline()-n.lease.Now()))
	return append([]core.Pair{
		{Key: "quorum", Val: boolInt(n.serving())}, {Key: "lease_left_ms", Val: left.Milliseconds()},
		{Key: "lease_lapses", Val: int64(n.lease.Lapses())}, {Key: "down_replies", Val: n.downs.Load()},
		{Key: "rejoins", Val: n.rejoins.Load()}, {Key: "takeover_slots_waiting", Val: n.takeover.Load().Waiting(n.lease.Now())},
		{Key: "lost_slots", Val: int64(n.takeover.Load().LostSlots())},
	}, n.downPairs()...)
}
