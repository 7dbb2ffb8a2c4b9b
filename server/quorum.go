package server

import (
	"errors"
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
func (s *Server) leaseNow(c *client) int64 {
	if c.Mark == 0 {
		c.Mark = s.batchStart(c) // run reuses it
	}
	return int64(c.Mark) + s.cl.leaseOff
}

// mayServe reports whether this node may serve slot for c now.
func (s *Server) mayServe(c *client, slot int) bool {
	cn := s.cl
	if cn.lease == nil {
		return true
	}
	now := s.leaseNow(c)
	if !cn.lease.ServesAt(now) || cn.takeover.Load().Waits(slot, now) {
		return false
	}
	return cn.repl == nil || cn.repl.Fresh(slot, now)
}

// serving reports whether this node holds its lease now: CLUSTER INFO's
// cluster_state.
func (cn *clusterNode) serving() bool { return cn.lease == nil || cn.lease.ServesAt(cn.lease.Now()) }

// down answers a keyed command this node may not serve now: as
// --owner-unreachable says, where local decides here all the same (it
// trades the bound for availability: see docs/cluster.md).
func (s *Server) down(c *client, cm *core.Command, args [][]byte, slot int) {
	s.cl.downs.Add(1)
	s.noteDown(s.downReason(c, slot), slot)
	s.answerUnserved(c, cm, args, errClusterDown)
}

// noteTakeovers marks the slots nv gives this node that old gave to a
// member nv says died: they wait TakeoverWait. The caller holds switchMu.
func (cn *clusterNode) noteTakeovers(old, nv *cluster.View) {
	if cn.lease != nil {
		cn.takeover.Store(cluster.NextTakeover(cn.takeover.Load(), old, nv, cn.lease.Now(), cn.lease.TakeoverWait()))
	}
}

// rejoin runs when a member reports that it declared this node dead while
// this node's lease had run out (a pause, or a partition from the
// majority): the others may have served its slots since. Each slot it
// owns then waits, as an import, for the node that served it to hand it
// back (replace, if that node served it: see handoff_resume.go), and is
// asked for with RL.PEER PULL; this node keeps its keys unless a handback
// replaces them, and serves from them if none comes within importWait.
func (s *Server) rejoin() {
	cn := s.cl
	cn.switchMu.Lock()
	v := cn.cur.Load()
	until := time.Now().Add(importWait)
	var slots, pulls []int
	for slot := range cluster.Slots {
		if st := cn.ho.state(slot); st != nil && st.mg != nil {
			// Moving out: another node may have served it since, so this
			// node hands nothing over (see waitLease), and never answers
			// RL.PEER RELEASED that it released it; it keeps the slots'
			// keys for their owner (handoff_kept.go).
			st.mg.disowned.Store(true)
			cn.ho.forgone[slot/64] |= 1 << (slot % 64)
		}
		ru, ok := v.Table.RunnerUp(slot)
		if !ok || v.Table.Owner(slot).Name != v.Self || cn.ho.state(slot) != nil {
			continue
		}
		st := cn.rejoinImportLocked(v, slot, ru, until)
		cn.ho.set(slot, st)
		slots = append(slots, slot)
		if st.keep { // one it handed on waits for that node's handoff: see handoff_holder.go
			pulls = append(pulls, slot)
		}
	}
	cn.switchMu.Unlock()
	if cn.repl != nil {
		cn.repl.ForgetHeld() // its copies are as old as its death
	}
	cn.rejoins.Add(1)
	if len(slots) == 0 {
		return
	}
	cn.ho.notify()
	go func() { // the lease's caller must not block
		cn.ho.running.wait()
		time.AfterFunc(importWait+time.Millisecond, s.expireImports)
		s.log.Warn("cluster: this node was declared dead while it could not serve; waiting for its slots to be handed back",
			"slots", len(slots))
		s.pullImports(v, pulls)
	}()
}

// quorumPairs are RL.CLUSTER INFO's fields about the lease.
func (s *Server) quorumPairs() []core.Pair {
	cn := s.cl
	if cn.lease == nil {
		return nil
	}
	left := max(0, time.Duration(cn.lease.Deadline()-cn.lease.Now()))
	return append([]core.Pair{
		{Key: "quorum", Val: boolInt(cn.serving())}, {Key: "lease_left_ms", Val: left.Milliseconds()},
		{Key: "lease_lapses", Val: int64(cn.lease.Lapses())}, {Key: "down_replies", Val: cn.downs.Load()},
		{Key: "rejoins", Val: cn.rejoins.Load()}, {Key: "takeover_slots_waiting", Val: cn.takeover.Load().Waiting(cn.lease.Now())},
		{Key: "lost_slots", Val: int64(cn.takeover.Load().LostSlots())},
	}, cn.downPairs()...)
}

// cmdRLClusterForget is RL.CLUSTER FORGET node: the member will not come
// back, so the quorum stops counting it (see cluster.Known).
func cmdRLClusterForget(s *Server, c *client, args [][]byte) {
	if s.clusterView(c) == nil {
		return
	}
	if s.cl.cfg.Forget == nil {
		c.conn.WriteError("ERR this node keeps no known member set")
		return
	}
	switch err := s.cl.cfg.Forget(string(args[2])); {
	case errors.Is(err, cluster.ErrForgetSelf):
		c.conn.WriteError("ERR I tried hard but I can't forget myself...") // Redis's words
	case errors.Is(err, cluster.ErrUnknownNode):
		// Forgotten already, perhaps by another node's FORGET, which the
		// known set's gossip brought: the operator's word stands here too.
		s.cl.forgetLost()
		c.conn.WriteError("ERR Unknown node " + string(args[2]))
	case err != nil:
		c.conn.WriteError("ERR " + err.Error())
	default:
		s.cl.forgetLost()
		c.conn.WriteString("OK")
	}
}
