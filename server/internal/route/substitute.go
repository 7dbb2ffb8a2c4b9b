package route

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// With --owner-unreachable local, a keyed command that no node can serve
// with the key's state is decided at the slot's substitute: the first of
// the slot's candidates (cluster.Table.Candidates: its owner, its
// runner-up, then the others in rendezvous order) that this node is, or
// sees alive and has not failed to reach within suspectFor. That is a
// command for a slot this node owns and may not serve now (no lease, a
// dead owner's slot within the takeover's wait, a lost slot): the owner is
// its own first candidate, and decides it. And it is a command whose owner
// this node cannot reach while this node has no lease: its side of a
// partition has no majority, so nobody takes the owner's slots over with
// their state. A node that holds its lease answers such a command with the
// error instead: its side has the majority, which takes the slots over
// with their copies once the owner's death is confirmed, and a substitute
// deciding in the meantime from a fresh quota would add a limit that the
// copies then forget.
//
// The nodes of one side of a partition reach each other and none of the
// others, so they pick the same substitute for each slot: each side
// decides each key at one node, and admits at most one limit more than
// the state it holds for the key allows (see docs/cluster.md,
// "--owner-unreachable when a node may not serve"). Where each node
// decided from its own state, a side of n nodes admitted up to n limits.

// suspectFor is how long a peer that failed a forward is passed over, as
// an owner to forward to and as a substitute, under local: long enough
// that one request a peer pays --cluster-timeout for, not each.
const suspectFor = 2 * time.Second

// maxSubstituteTries bounds the forwards one command makes to substitutes
// that do not answer: each failure rules that peer out for the next pick,
// and this node is always a candidate, so the picks end here.
const maxSubstituteTries = 3

// pickSubstitute returns the first of slot's candidates under v that is
// v.Self, or a member of v that out does not rule out; v.Self if none is
// (a node that left the table decides for itself).
func pickSubstitute(v *cluster.View, slot int, out func(name string) bool) cluster.Node {
	if o := v.Table.Owner(slot); o.Name == v.Self {
		return o // the common case, a node that may not serve its own slot: no list to make
	}
	var buf [8]cluster.Node
	for _, n := range v.Table.Candidates(slot, buf[:0]) {
		if n.Name == v.Self {
			return n
		}
		if _, alive := v.Member(n.Name); alive && !out(n.Name) {
			return n
		}
	}
	return cluster.Node{Name: v.Self}
}

// suspect reports whether a forward to name failed within suspectFor.
func (rt *Router) suspect(name string) bool {
	ps, ok := rt.peers.Load(name)
	if !ok {
		return false
	}
	at := ps.(*peerStats).failed.Load()
	return at != 0 && unixMilliNow()-at < suspectFor.Milliseconds()
}

// reachable reports whether owner may be forwarded to under local: a
// member of v, not suspect.
func (rt *Router) reachable(v *cluster.View, owner string) bool {
	_, alive := v.Member(owner)
	return alive && !rt.suspect(owner)
}

// substitute decides cm at slot's substitute, skipping skip (an owner
// that just failed), and reports whether it went to another node.
// errText is the reply when no substitute answers.
func (rt *Router) substitute(x *core.Session, cm *core.Command, args [][]byte, slot int, skip, errText string) bool {
	out := func(name string) bool { return name == skip || rt.suspect(name) }
	for range maxSubstituteTries {
		v := rt.ho.View()
		sub := pickSubstitute(v, slot, out)
		if sub.Name == v.Self {
			rt.run.Run(x, cm, args)
			return false
		}
		reps, err := rt.forward(sub, [][][]byte{hopLevelArgs(x, args, hopSubstitute)})
		if err == nil {
			x.Out.WriteRaw(reps[0])
			return true
		}
		rt.log.Debug("substitute unreachable", "node", sub.Name, "slot", slot, "err", err)
	}
	x.Out.WriteError(errText)
	return true
}

// substituteIsSelf reports whether this node is slot's substitute now.
func (rt *Router) substituteIsSelf(slot int) bool {
	v := rt.ho.View()
	return pickSubstitute(v, slot, rt.suspect).Name == v.Self
}
