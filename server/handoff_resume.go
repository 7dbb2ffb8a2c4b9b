package server

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
)

// An owner paused for longer than failure detection (a stopped process, a
// frozen VM, a long stall) is declared dead: the runner-ups of its slots
// take them over from their copies and go on deciding its keys. When it
// resumes, it refutes its death, and its slots come back to it. In its own
// table they never left, so a handoff would leave it its keys as they were
// before the pause, and what the others decided meanwhile would be lost
// (TestPausedOwnerResumes: every such decision admitted again).
//
// So a node that saw a member declared dead, and stayed with a majority of
// the members it had while the member was away, hands its slots back with
// IMPORT mode replace: the member then takes the slots it thinks it never
// stopped serving like any other import, its keys replaced by the ones
// handed over. It waits for them first, as for any import: their
// requests go to the node handing them over until its DONE. A member that
// kept serving its own clients through a partition loses its decisions of
// that time instead: the majority declared it dead, and theirs stand.
// A node cut off from the majority (whose views lost most members) hands
// back with reset, and the majority's owners keep their keys, as in a flap.

// absence is what a node saw while a member it saw declared dead was away.
type absence struct {
	before int // the members of the view before the death
	least  int // the fewest members of a view since
}

// majority reports whether the views kept more than half the members.
func (a absence) majority() bool { return 2*a.least > a.before }

// noteDeaths records the members nv says died, and forgets those it says
// left; every absence sees nv's members. The caller holds switchMu.
func (h *handoff) noteDeaths(old, nv *cluster.View) {
	n := len(nv.Table.Nodes())
	for name, a := range h.died {
		h.died[name] = absence{before: a.before, least: min(a.least, n)}
	}
	for _, m := range nv.Gone {
		if m.State != cluster.StateDead {
			delete(h.died, m.Name)
			continue
		}
		if h.died == nil {
			h.died = map[string]absence{}
		}
		before := n + 1
		if old != nil {
			before = max(len(old.Table.Nodes()), before)
		}
		h.died[m.Name] = absence{before: before, least: n}
	}
}

// importAgain makes this node import slots it serves from node from, which
// hands them back after this node was declared dead: they wait for from's
// DONE, as imports do, and their keys go (see peerImport).
func (s *Server) importAgain(from string, own *slotBits) []int {
	cn := s.cl
	cn.switchMu.Lock()
	v := cn.cur.Load()
	node, ok := v.Table.Node(from)
	var slots []int
	if ok {
		st := &slotState{mode: modeImporting, peer: node, until: time.Now().Add(importWait)}
		for slot := range cluster.Slots {
			if own.has(slot) {
				cn.ho.set(slot, st)
				slots = append(slots, slot)
			}
		}
	}
	cn.switchMu.Unlock()
	if len(slots) == 0 {
		return nil
	}
	cn.ho.notify()
	cn.ho.running.wait() // runs that read a slot's state before the gate end first
	time.AfterFunc(importWait+time.Millisecond, s.expireImports)
	s.log.Warn("cluster: a node hands back slots this node was declared dead for; taking its keys for them",
		"from", from, "slots", len(slots))
	return slots
}
