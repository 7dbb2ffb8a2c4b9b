package server

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/tidwall/redcon"
)

// clusterNode is the server's cluster state.
type clusterNode struct {
	cfg         ClusterConfig
	keys        [][]byte     // the peer keys a handshake may prove: Secret's, then OldSecrets'
	forwarded   atomic.Int64 // commands sent to their owners
	unreachable atomic.Int64 // commands answered by --owner-unreachable
	pols        policyVersions
	peers       sync.Map            // node name → *peerStats, for /metrics; as many as nodes ever forwarded to
	batches     sync.Pool           // *remoteBatch, for forwardLater
	repl        *replica.Replicator // nil without --replicas: ho.Replicator(), kept here for the peers' commands

	// ho is the handoff (package handoff): the view routing uses, the
	// moving slots' states, the lease's checks, the replicator.
	ho   *handoff.Node
	hops atomic.Int64             // requests other nodes sent here (RL.HOP), for QuietHops
	topo atomic.Pointer[topology] // CLUSTER SLOTS', SHARDS' and NODES' replies for the latest view asked about
}

// peerStats count what this node forwarded to one peer.
type peerStats struct {
	forwarded, errors atomic.Int64
	created           atomic.Int64 // unix ms of the first forward: CLUSTER LINKS' create-time
}

// peer returns name's counters, creating them the first time.
func (cn *clusterNode) peer(name string) *peerStats {
	if ps, ok := cn.peers.Load(name); ok {
		return ps.(*peerStats)
	}
	fresh := new(peerStats)
	fresh.created.Store(unixMilliNow())
	ps, _ := cn.peers.LoadOrStore(name, fresh)
	return ps.(*peerStats)
}

func newClusterNode(cfg ClusterConfig) (*clusterNode, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	keys := [][]byte{cluster.PeerKey(cfg.Secret)}
	for _, old := range cfg.OldSecrets {
		keys = append(keys, cluster.PeerKey(old))
	}
	return &clusterNode{cfg: cfg, keys: keys}, nil
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
func (s *Server) routeOf(c *client, cm *core.Command, args [][]byte) route {
	if s.cl == nil || cm.FirstKey == 0 {
		return route{local: true}
	}
	slot, ok := commandSlot(cm, args)
	switch {
	case !ok && c.hop != hopClient:
		return route{local: true} // the forwarding node checked it
	case !ok:
		return route{reply: errCrossSlot}
	}
	v := s.cl.view()
	if v.Waiting {
		s.cl.ho.Waiting(slot)
		return route{slot: slot, reply: errClusterDown}
	}
	if st := s.cl.ho.State(slot); st != nil {
		r := s.routeMoving(c, slot, st)
		r.down = r.local && !s.cl.ho.MayServe(&c.Session, slot)
		return r
	}
	owner := v.Table.Owner(slot)
	switch {
	case owner.Name == v.Self:
		return route{local: true, slot: slot, down: !s.cl.ho.MayServe(&c.Session, slot)}
	case c.hop == hopForward:
		return route{slot: slot, owner: owner, level: hopHandoff}
	case c.hop == hopHandoff:
		return route{slot: slot, reply: errHandedOff}
	case s.cl.cfg.Redirect:
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
func hopArgs(c *client, args [][]byte) [][]byte { return hopLevelArgs(c, args, hopForward) }

// hopLevelArgs wraps a client's command for another node at hop level.
func hopLevelArgs(c *client, args [][]byte, level int) [][]byte {
	out := make([][]byte, 0, len(args)+3)
	out = append(out, []byte(cluster.HopCommand), []byte{'0' + byte(max(level, hopForward))}, []byte{'0' + byte(c.Proto)})
	return append(out, args...)
}

// forward sends cmds to owner and returns their replies; this is where a
// connection waits for another node. With redcon that blocks only this
// connection's goroutine. A transport that can complete replies later
// replaces this one call.
func (s *Server) forward(owner cluster.Node, cmds [][][]byte) ([][]byte, error) {
	s.cl.forwarded.Add(int64(len(cmds)))
	ps := s.cl.peer(owner.Name)
	ps.forwarded.Add(int64(len(cmds)))
	reps, err := s.cl.cfg.Forwarder.Forward(context.Background(), owner.Addr, cmds)
	if err != nil {
		ps.errors.Add(1)
	}
	return reps, err
}

// routeOne runs a keyed command where routeOf says: here, under the
// handoff's barrier (see barrier), or at another node. It reports whether
// the command was forwarded.
func (s *Server) routeOne(c *client, cm *core.Command, args [][]byte) bool {
	switch {
	case cm.FirstKey == 0 && cm.Flags&core.FlagBarrier != 0:
		// A transaction's commands run here under the barrier too.
		s.runEntered(c, cm, args, s.cl.ho.Enter(c.ID))
		return false
	case cm.FirstKey == 0 && cm.Wraps > 0:
		// Not under the barrier: RL.HOP's command enters it itself, and may
		// wait for a gate that opens only once the barrier is clear. Nor
		// counted as a command of its own (INFO commandstats, SLOWLOG): the
		// command it wraps is. Timing both, and switching the connection's
		// pending counts between the two at every request, cost the owner
		// more than the decision.
		s.call(c, cm, args)
		return false
	case cm.FirstKey == 0:
		s.run(c, cm, args)
		return false
	}
	waits, crossed := 0, 0
	for {
		ticket := s.cl.ho.Enter(c.ID)
		r := s.routeOf(c, cm, args)
		if moved := s.cl.nudge(c, r, waits+crossed); moved != "" {
			s.cl.ho.Leave(c.ID, ticket)
			c.conn.WriteError(moved)
			return false
		}
		if r.down {
			s.cl.ho.Leave(c.ID, ticket)
			s.down(c, cm, args, r.slot)
			return false
		}
		if r.local {
			s.runEntered(c, cm, args, ticket)
			return false
		}
		s.cl.ho.Leave(c.ID, ticket)
		switch {
		case r.gate != nil && waits < maxGateWaits && r.gate.WaitOpen(gateWait):
			waits++
			continue
		case r.gate != nil:
			c.conn.WriteError(errTryAgain)
		case r.reply != "":
			c.conn.WriteError(r.reply)
		case r.level == hopHandoff:
			if !s.forwardHandoff(c, cm, args, r, crossed >= maxGateWaits) {
				if r.importing != nil { // the node this one imports from has not got the slot: another sends it
					s.cl.ho.WaitChange(r.slot, r.importing, gateWait)
				}
				crossed++
				continue
			}
		case s.canLater(c):
			s.forwardLater(c, cm, args, r.slot, r.owner)
		default:
			s.forwardNow(c, cm, args, r)
		}
		return true
	}
}

// runEntered runs a command that entered the handoff's barrier, and leaves it.
func (s *Server) runEntered(c *client, cm *core.Command, args [][]byte, ticket uint32) {
	defer s.cl.ho.Leave(c.ID, ticket)
	s.run(c, cm, args)
}

// down answers a keyed command this node may not serve now: as
// --owner-unreachable says, where local decides here all the same (it
// trades the bound for availability: see docs/cluster.md).
func (s *Server) down(c *client, cm *core.Command, args [][]byte, slot int) {
	s.cl.ho.Down(&c.Session, slot)
	s.answerUnserved(c, cm, args, errClusterDown)
}

// forwardNow forwards one command and waits for its reply.
func (s *Server) forwardNow(c *client, cm *core.Command, args [][]byte, r route) {
	reps, err := s.forward(r.owner, [][][]byte{hopArgs(c, args)})
	w := restartWindow{until: time.Now().Add(restartWait)} // an owner restarting at once: see retryElsewhere
	for pause := 5 * time.Millisecond; err != nil && restarting(err) && time.Now().Add(pause).Before(w.until) &&
		s.cl.view().Table.Owner(r.slot).Name == r.owner.Name; pause = min(2*pause, 100*time.Millisecond) {
		time.Sleep(pause)
		reps, err = s.forward(r.owner, [][][]byte{hopArgs(c, args)})
		w.note(err)
	}
	if err != nil {
		// The owner may have just left: if the slot has another owner now, go there once.
		r2 := s.routeOf(c, cm, args)
		switch {
		case r2.local:
			s.run(c, cm, args)
			return
		case r2.reply == "" && r2.gate == nil && r2.owner.Name != r.owner.Name:
			reps, err = s.forward(r2.owner, [][][]byte{hopLevelArgs(c, args, r2.level)})
		}
	}
	if err != nil {
		s.unreachable(c, cm, args, r.owner, err)
		return
	}
	c.conn.WriteRaw(reps[0])
}

// unreachable answers a command whose owner could not be reached, as
// --owner-unreachable says.
func (s *Server) unreachable(c *client, cm *core.Command, args [][]byte, owner cluster.Node, err error) {
	s.log.Debug("owner unreachable", "owner", owner.Name, "err", err)
	s.cl.unreachable.Add(1)
	s.answerUnserved(c, cm, args, errOwnerUnreach+owner.Name)
}

// answerUnserved answers a keyed command no node can decide now, as
// --owner-unreachable says; errText is the reply of the error mode.
func (s *Server) answerUnserved(c *client, cm *core.Command, args [][]byte, errText string) {
	mode := s.cl.cfg.OwnerUnreachable
	switch {
	case mode == UnreachableLocal:
		s.run(c, cm, args)
	case (mode == UnreachableAllow || mode == UnreachableDeny) && cm.Blind != nil:
		writeBlind(c, cm.Blind(mode == UnreachableAllow))
	default:
		c.conn.WriteError(errText)
	}
}

// writeBlind writes a decision made without the key's state (see core.BlindFunc).
func writeBlind(c *client, f []int64) {
	c.conn.WriteArray(len(f))
	for _, v := range f {
		c.conn.WriteInt64(v)
	}
}

// execElsewhere runs EXEC for a transaction that is not all this node's:
// one owner elsewhere gets the whole transaction; keys of several owners
// get CROSSSLOT, as in Redis Cluster. It reports false when every key is
// this node's.
func (s *Server) execElsewhere(c *client, q []core.Queued) bool {
	owner, first, done := s.txnRoute(c, q)
	if done || owner == nil || owner.local {
		return done
	}
	level := max(owner.level, hopForward)
	open, run := s.table.TxFrame() // MULTI and EXEC, as the table declares them
	cmds := [][][]byte{hopLevelArgs(c, open, level)}
	for _, e := range q {
		cmds = append(cmds, hopLevelArgs(c, e.Args, level))
	}
	cmds = append(cmds, hopLevelArgs(c, run, level))
	reps, err := s.forward(owner.owner, cmds)
	switch {
	case err != nil:
		c.conn.WriteError(errOwnerUnreach + owner.owner.Name)
	case isHandedOff(reps[len(reps)-1]) && s.routeOf(c, first.Cmd, first.Args).local:
		return false // the old owner cut the slot after this node chose it: it is this node's now
	case isHandedOff(reps[len(reps)-1]):
		c.conn.WriteError(errTryAgain)
	default:
		c.conn.WriteRaw(reps[len(reps)-1])
	}
	return true
}

// txnRoute is where a transaction's keyed commands run: the route they
// share, and its first keyed command. done means it has replied instead
// (CROSSSLOT, TRYAGAIN for a gated slot, HANDEDOFF). A transaction another
// node forwarded runs where it lands, unless this node has handed its slot
// over (then it answers HANDEDOFF, and the sender runs it).
func (s *Server) txnRoute(c *client, q []core.Queued) (owner *route, first core.Queued, done bool) {
	for _, e := range q {
		r := s.routeOf(c, e.Cmd, e.Args)
		switch {
		case r.local && e.Cmd.FirstKey == 0:
			continue
		case r.down && s.cl.cfg.OwnerUnreachable != UnreachableLocal:
			c.conn.WriteError(errClusterDown)
			return nil, e, true
		case r.gate != nil:
			c.conn.WriteError(errTryAgain)
			return nil, e, true
		case r.reply != "" && !r.local && (c.hop == hopClient || r.reply == errHandedOff):
			c.conn.WriteError(r.reply)
			return nil, e, true
		case c.hop != hopClient:
			continue
		case owner == nil:
			owner, first = &r, e
		case owner.local != r.local || owner.owner.Name != r.owner.Name:
			c.conn.WriteError(errCrossSlot)
			return nil, e, true
		}
	}
	return owner, first, false
}

// canLater reports whether a forwarded request's reply can complete later,
// through a Later, while the connection runs the client's next requests.
// Replies held for a commit (appendfsync always) and --owner-unreachable
// local, which must run the command on this connection, wait instead.
func (s *Server) canLater(c *client) bool {
	return c.Conn != nil && !c.dur.Holding() && s.cl.cfg.OwnerUnreachable != UnreachableLocal
}

// unreachableReply is unreachable's reply as bytes, for a Later.
func (s *Server) unreachableReply(cm *core.Command, owner cluster.Node, err error) []byte {
	s.log.Debug("owner unreachable", "owner", owner.Name, "err", err)
	s.cl.unreachable.Add(1)
	mode := s.cl.cfg.OwnerUnreachable
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
