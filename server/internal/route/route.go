package route

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/tidwall/redcon"
)

// peerStats count what this node forwarded to one peer.
type peerStats struct {
	forwarded, errors atomic.Int64
	created           atomic.Int64 // unix ms of the first forward: CLUSTER LINKS' create-time
	failed            atomic.Int64 // unix ms of the last forward that failed, 0 once one succeeds: see suspect
}

// note records a forward's outcome for suspect.
func (ps *peerStats) note(err error) {
	switch {
	case err != nil:
		ps.errors.Add(1)
		ps.failed.Store(unixMilliNow())
	case ps.failed.Load() != 0:
		ps.failed.Store(0)
	}
}

// peer returns name's counters, creating them the first time.
func (r *Router) peer(name string) *peerStats {
	if ps, ok := r.peers.Load(name); ok {
		return ps.(*peerStats)
	}
	fresh := new(peerStats)
	fresh.created.Store(unixMilliNow())
	ps, _ := r.peers.LoadOrStore(name, fresh)
	return ps.(*peerStats)
}

// route is where a command goes.
type route struct {
	local bool
	slot  int
	owner cluster.Node       // for a remote route
	reply string             // an error to reply instead, such as CROSSSLOT or MOVED
	down  bool               // local, but this node may not serve the slot now (see server/internal/handoff, lease.go)
	level int                // the hop level to forward with: hopForward, or hopHandoff
	gate  *handoff.Migration // the slot's last copy is being made: wait for it, then route again
	// importing is the slot's state when this node imports it, so that a
	// request the old owner refuses can wait for the state to change.
	importing *handoff.SlotState
}

// routeOf decides where c's command cm runs. A command without keys runs
// here. A keyed one runs at its slot's owner, except while the slot moves
// (see routeMoving). A request another node forwarded (hopForward) is
// served here if this node owns the slot, and otherwise sent once more, as
// hopHandoff, to the owner this node's table names: two nodes whose
// tables differ for a moment then never pass a request back and forth, and
// never serve a slot that neither owns.
func (rt *Router) routeOf(x *core.Session, c *Conn, cm *core.Command, args [][]byte) route {
	if !rt.on || cm.FirstKey == 0 {
		return route{local: true}
	}
	slot, ok := commandSlot(cm, args)
	switch {
	case !ok && c.hop != hopClient:
		return route{local: true} // the forwarding node checked it
	case !ok:
		return route{reply: errCrossSlot}
	case c.hop == hopSubstitute:
		return route{local: true, slot: slot} // the sender picked this node to decide: see substitute
	}
	v := rt.ho.View()
	if v.Waiting {
		rt.ho.Waiting(slot)
		return route{slot: slot, reply: errClusterDown}
	}
	if st := rt.ho.State(slot); st != nil {
		r := rt.routeMoving(c, slot, st)
		r.down = r.local && !rt.ho.MayServe(x, slot)
		return r
	}
	owner := v.Table.Owner(slot)
	switch {
	case owner.Name == v.Self:
		return route{local: true, slot: slot, down: !rt.ho.MayServe(x, slot)}
	case c.hop == hopForward:
		return route{slot: slot, owner: owner, level: hopHandoff}
	case c.hop == hopHandoff:
		return route{slot: slot, reply: errHandedOff}
	case rt.cfg.Redirect:
		return route{slot: slot, reply: "MOVED " + strconv.Itoa(slot) + " " + owner.Addr}
	}
	return route{slot: slot, owner: owner, level: hopForward}
}

// commandSlot returns the slot of cm's keys in args, and false if they
// are in more than one. Keys of different slots on one owner are still
// refused, as Redis Cluster refuses them: a client cannot know the owners.
func commandSlot(cm *core.Command, args [][]byte) (int, bool) {
	last := cm.LastKey
	if last < 0 {
		last = len(args) + last
	}
	slot := -1
	for i := cm.FirstKey; i <= last && i < len(args); i += max(cm.KeyStep, 1) {
		s := cluster.Slot(args[i])
		if slot >= 0 && s != slot {
			return 0, false
		}
		slot = s
	}
	return max(slot, 0), true
}

// hopArgs wraps a client's command for its owner.
func hopArgs(x *core.Session, args [][]byte) [][]byte { return hopLevelArgs(x, args, hopForward) }

// hopLevelArgs wraps a client's command for another node at hop level.
func hopLevelArgs(x *core.Session, args [][]byte, level int) [][]byte {
	out := make([][]byte, 0, len(args)+3)
	out = append(out, []byte(cluster.HopCommand), []byte{'0' + byte(max(level, hopForward))}, []byte{'0' + byte(x.Proto)})
	return append(out, args...)
}

// forward sends cmds to owner and returns their replies; this is where a
// connection waits for another node. With redcon that blocks only this
// connection's goroutine. A transport that can complete replies later
// replaces this one call.
func (rt *Router) forward(owner cluster.Node, cmds [][][]byte) ([][]byte, error) {
	rt.forwarded.Add(int64(len(cmds)))
	ps := rt.peer(owner.Name)
	ps.forwarded.Add(int64(len(cmds)))
	reps, err := rt.cfg.Forwarder.Forward(context.Background(), owner.Addr, cmds)
	ps.note(err)
	return reps, err
}

// Route runs a command where routeOf says (core.Router): see routeOne.
func (rt *Router) Route(x *core.Session, cm *core.Command, args [][]byte) bool {
	return rt.routeOne(x, rt.slot.Get(x), cm, args)
}

// Elsewhere runs EXEC at the owner of the transaction's keys, if that
// is another node (multi.Delegate; see execElsewhere).
func (rt *Router) Elsewhere(x *core.Session, q []core.Queued) bool {
	return rt.on && rt.execElsewhere(x, rt.slot.Get(x), q)
}

// routeOne runs a keyed command where routeOf says: here, under the
// handoff's barrier (see barrier), or at another node. It reports whether
// the command was forwarded.
func (rt *Router) routeOne(x *core.Session, c *Conn, cm *core.Command, args [][]byte) bool {
	switch {
	case cm.FirstKey == 0 && cm.Flags&core.FlagBarrier != 0:
		// A transaction's commands run here under the barrier too.
		rt.runEntered(x, cm, args, rt.ho.Enter(x.ID))
		return false
	case cm.FirstKey == 0 && cm.Wraps > 0:
		// Not under the barrier: RL.HOP's command enters it itself, and may
		// wait for a gate that opens only once the barrier is clear. Nor
		// counted as a command of its own (INFO commandstats, SLOWLOG): the
		// command it wraps is. Timing both, and switching the connection's
		// pending counts between the two at every request, cost the owner
		// more than the decision.
		rt.run.Call(x, cm, args)
		return false
	case cm.FirstKey == 0:
		rt.run.Run(x, cm, args)
		return false
	}
	waits, crossed := 0, 0
	for {
		ticket := rt.ho.Enter(x.ID)
		r := rt.routeOf(x, c, cm, args)
		if moved := rt.nudge(x, c, r, waits+crossed); moved != "" {
			rt.ho.Leave(x.ID, ticket)
			x.Out.WriteError(moved)
			return false
		}
		if r.down {
			rt.ho.Leave(x.ID, ticket)
			return rt.down(x, cm, args, r.slot)
		}
		if r.local {
			rt.runEntered(x, cm, args, ticket)
			return false
		}
		rt.ho.Leave(x.ID, ticket)
		switch {
		case r.level == hopForward && rt.cfg.OwnerUnreachable == UnreachableLocal && r.gate == nil && r.reply == "" &&
			!rt.ho.Serving() && !rt.reachable(rt.ho.View(), r.owner.Name):
			// An owner declared dead, or one a forward failed to reach
			// just now, from a side without a majority: not another wait
			// of --cluster-timeout for each request.
			rt.unreached.Add(1)
			return rt.substitute(x, cm, args, r.slot, r.owner.Name, errOwnerUnreach+r.owner.Name)
		case r.gate != nil && waits < maxGateWaits && r.gate.WaitOpen(gateWait):
			waits++
			continue
		case r.gate != nil:
			x.Out.WriteError(errTryAgain)
		case r.reply != "":
			x.Out.WriteError(r.reply)
		case r.level == hopHandoff:
			if !rt.forwardHandoff(x, cm, args, r, crossed >= maxGateWaits) {
				if r.importing != nil { // the node this one imports from has not got the slot: another sends it
					rt.ho.WaitChange(r.slot, r.importing, gateWait)
				}
				crossed++
				continue
			}
		case rt.canLater(x):
			rt.forwardLater(x, c, cm, args, r.slot, r.owner)
		default:
			rt.forwardNow(x, c, cm, args, r)
		}
		return true
	}
}

// runEntered runs a command that entered the handoff's barrier, and leaves it.
func (rt *Router) runEntered(x *core.Session, cm *core.Command, args [][]byte, ticket uint32) {
	defer rt.ho.Leave(x.ID, ticket)
	rt.run.Run(x, cm, args)
}

// down answers a keyed command this node may not serve now: as
// --owner-unreachable says, where local decides at the slot's substitute
// (it trades the bound for availability: see substitute.go). It reports
// whether the command went to another node.
func (rt *Router) down(x *core.Session, cm *core.Command, args [][]byte, slot int) bool {
	rt.ho.Down(x, slot)
	if rt.cfg.OwnerUnreachable == UnreachableLocal {
		return rt.substitute(x, cm, args, slot, "", errClusterDown)
	}
	rt.answerUnserved(x, cm, args, errClusterDown)
	return false
}

// forwardNow forwards one command and waits for its reply.
func (rt *Router) forwardNow(x *core.Session, c *Conn, cm *core.Command, args [][]byte, r route) {
	reps, err := rt.forward(r.owner, [][][]byte{hopArgs(x, args)})
	w := restartWindow{until: time.Now().Add(restartWait)} // an owner restarting at once: see retryElsewhere
	for pause := 5 * time.Millisecond; err != nil && restarting(err) && time.Now().Add(pause).Before(w.until) &&
		rt.ho.View().Table.Owner(r.slot).Name == r.owner.Name; pause = min(2*pause, 100*time.Millisecond) {
		time.Sleep(pause)
		reps, err = rt.forward(r.owner, [][][]byte{hopArgs(x, args)})
		w.note(err)
	}
	if err != nil {
		// The owner may have just left: if the slot has another owner now, go there once.
		r2 := rt.routeOf(x, c, cm, args)
		switch {
		case r2.local:
			rt.run.Run(x, cm, args)
			return
		case r2.reply == "" && r2.gate == nil && r2.owner.Name != r.owner.Name:
			reps, err = rt.forward(r2.owner, [][][]byte{hopLevelArgs(x, args, r2.level)})
		}
	}
	if err != nil {
		rt.unreachable(x, cm, args, r.owner, err)
		return
	}
	x.Out.WriteRaw(reps[0])
}

// unreachable answers a command whose owner could not be reached, as
// --owner-unreachable says.
func (rt *Router) unreachable(x *core.Session, cm *core.Command, args [][]byte, owner cluster.Node, err error) {
	rt.log.Debug("owner unreachable", "owner", owner.Name, "err", err)
	rt.unreached.Add(1)
	if rt.cfg.OwnerUnreachable == UnreachableLocal && !rt.ho.Serving() {
		rt.substitute(x, cm, args, rt.slotOf(cm, args), owner.Name, errOwnerUnreach+owner.Name)
		return
	}
	rt.answerUnserved(x, cm, args, errOwnerUnreach+owner.Name)
}

// slotOf is the slot of cm's keys in args, which routeOf found to share one.
func (rt *Router) slotOf(cm *core.Command, args [][]byte) int {
	slot, _ := commandSlot(cm, args)
	return slot
}

// answerUnserved answers a keyed command no node can decide now, as
// --owner-unreachable says, local aside (see substitute); errText is the
// reply of the error mode.
func (rt *Router) answerUnserved(x *core.Session, cm *core.Command, args [][]byte, errText string) {
	mode := rt.cfg.OwnerUnreachable
	switch {
	case (mode == UnreachableAllow || mode == UnreachableDeny) && cm.Blind != nil:
		writeBlind(x, cm.Blind(mode == UnreachableAllow))
	default:
		x.Out.WriteError(errText)
	}
}

// writeBlind writes a decision made without the key's state (see core.BlindFunc).
func writeBlind(x *core.Session, f []int64) {
	x.Out.WriteArray(len(f))
	for _, v := range f {
		x.Out.WriteInt64(v)
	}
}

// execElsewhere runs EXEC for a transaction that is not all this node's:
// one owner elsewhere gets the whole transaction; keys of several owners
// get CROSSSLOT, as in Redis Cluster. It reports false when every key is
// this node's.
func (rt *Router) execElsewhere(x *core.Session, c *Conn, q []core.Queued) bool {
	owner, first, done := rt.txnRoute(x, c, q)
	if done || owner == nil || owner.local {
		return done
	}
	level := max(owner.level, hopForward)
	open, run := rt.table.TxFrame() // MULTI and EXEC, as the table declares them
	cmds := [][][]byte{hopLevelArgs(x, open, level)}
	for _, e := range q {
		cmds = append(cmds, hopLevelArgs(x, e.Args, level))
	}
	cmds = append(cmds, hopLevelArgs(x, run, level))
	reps, err := rt.forward(owner.owner, cmds)
	switch {
	case err != nil:
		x.Out.WriteError(errOwnerUnreach + owner.owner.Name)
	case isHandedOff(reps[len(reps)-1]) && rt.routeOf(x, c, first.Cmd, first.Args).local:
		return false // the old owner cut the slot after this node chose it: it is this node's now
	case isHandedOff(reps[len(reps)-1]):
		x.Out.WriteError(errTryAgain)
	default:
		x.Out.WriteRaw(reps[len(reps)-1])
	}
	return true
}

// txnRoute is where a transaction's keyed commands run: the route they
// share, and its first keyed command. done means it has replied instead
// (CROSSSLOT, TRYAGAIN for a gated slot, HANDEDOFF). A transaction another
// node forwarded runs where it lands, unless this node has handed its slot
// over (then it answers HANDEDOFF, and the sender runs it).
func (rt *Router) txnRoute(x *core.Session, c *Conn, q []core.Queued) (owner *route, first core.Queued, done bool) {
	for _, e := range q {
		r := rt.routeOf(x, c, e.Cmd, e.Args)
		switch {
		case r.local && e.Cmd.FirstKey == 0:
			continue
		case r.down && (rt.cfg.OwnerUnreachable != UnreachableLocal || !rt.substituteIsSelf(r.slot)):
			// local runs a transaction only at its substitute, which is this node
			x.Out.WriteError(errClusterDown)
			return nil, e, true
		case r.gate != nil:
			x.Out.WriteError(errTryAgain)
			return nil, e, true
		case r.reply != "" && !r.local && (c.hop == hopClient || r.reply == errHandedOff):
			x.Out.WriteError(r.reply)
			return nil, e, true
		case c.hop != hopClient:
			continue
		case owner == nil:
			owner, first = &r, e
		case owner.local != r.local || owner.owner.Name != r.owner.Name:
			x.Out.WriteError(errCrossSlot)
			return nil, e, true
		}
	}
	return owner, first, false
}

// canLater reports whether a forwarded request's reply can complete later,
// through a Later, while the connection runs the client's next requests.
// Replies held for a commit (appendfsync always) and --owner-unreachable
// local, which must run the command on this connection, wait instead.
func (rt *Router) canLater(x *core.Session) bool {
	return x.Conn != nil && rt.cfg.OwnerUnreachable != UnreachableLocal && !rt.conns.Holding(x)
}

// unreachableReply is unreachable's reply as bytes, for a Later.
func (rt *Router) unreachableReply(cm *core.Command, owner cluster.Node, err error) []byte {
	rt.log.Debug("owner unreachable", "owner", owner.Name, "err", err)
	rt.unreached.Add(1)
	mode := rt.cfg.OwnerUnreachable
	if (mode == UnreachableAllow || mode == UnreachableDeny) && cm.Blind != nil {
		f := cm.Blind(mode == UnreachableAllow)
		b := redcon.AppendArray(nil, len(f))
		for _, v := range f {
			b = redcon.AppendInt(b, v)
		}
		return b
	}
	return redcon.AppendError(nil, errOwnerUnreach+owner.Name)
}
