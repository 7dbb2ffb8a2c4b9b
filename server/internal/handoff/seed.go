package handoff

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// An old owner that hands slots over, and is not their backup in its
// table, seeds that backup with what it handed over, so that the new
// owner's death before its first full sync does not leave them lost: see
// server/internal/replica's Seed. The backup answers OK whatever it took;
// a node that predates SEED answers cluster.PeerRefused, and the slots
// wait for the new owner's full sync there, as before.

// seedBackups sends, for each slot of slots that this node has just cut
// over to node to, the slot's keys to its backup by this node's table,
// when that is neither this node (KeepHanded keeps them) nor to. It reads
// the keys now, before the cut drops them, and sends them on a goroutine
// of its own, whole slots to a message.
func (n *Node) seedBackups(to cluster.Node, slots []int) {
	if n.repl == nil {
		return
	}
	v := n.cur.Load()
	by := map[string][]int{}
	for _, slot := range slots {
		b, ok := v.Table.RunnerUp(slot)
		if ok && v.Table.Owner(slot).Name == to.Name && b.Name != v.Self && b.Name != to.Name {
			by[b.Name] = append(by[b.Name], slot)
		}
	}
	for name, slots := range by {
		b, _ := v.Table.Node(name)
		msgs := seedMessages(n.store, slots)
		go n.sendSeeds(v.Self, b, to, msgs)
	}
}

// seedMessage is one RL.PEER SEED: whole slots and their keys.
type seedMessage struct {
	slots   []int
	payload []byte
}

// seedMessages reads the keys of slots from m and packs them into
// messages of whole slots, each up to chunkBytes (a slot larger than
// that goes alone).
func seedMessages(m *shard.Map, slots []int) []seedMessage {
	in := replica.SlotSet(slots)
	bySlot := map[int][]shard.Entry{}
	var es []shard.Entry
	for i := range shardsOf(m) {
		es = m.ExportShardFunc(i, in.KeyIn, es[:0])
		for _, e := range es {
			slot := cluster.Slot(policy.Route(e.Key))
			bySlot[slot] = append(bySlot[slot], e)
		}
	}
	var out []seedMessage
	var cur seedMessage
	var batch []shard.Entry
	flush := func() {
		if len(cur.slots) == 0 {
			return
		}
		cur.payload = persistence.AppendEntries([]byte{}, batch, time.Now().UnixNano())
		out = append(out, cur)
		cur, batch = seedMessage{}, nil
	}
	for _, slot := range slots {
		ses := bySlot[slot]
		if len(cur.slots) > 0 && approxBytes(batch)+approxBytes(ses) > chunkBytes {
			flush()
		}
		cur.slots = append(cur.slots, slot)
		batch = append(batch, ses...)
	}
	flush()
	return out
}

// sendSeeds sends msgs to the backup b of slots handed over to owner.
func (n *Node) sendSeeds(self string, b, owner cluster.Node, msgs []seedMessage) {
	sent := 0
	for _, msg := range msgs {
		err := n.peerCallAs(self, b, cluster.PeerSeed, owner.Name, []byte(formatSlots(msg.slots)), msg.payload)
		if err != nil {
			if msg := err.Error(); msg != errPeerAuth && msg != cluster.PeerNoReplicas { // a node before SEED, or without replicas
				n.log.Warn("cluster: could not seed the new owner's backup with the handed-over keys; they wait for its full sync",
					"backup", b.Name, "owner", owner.Name, "err", err)
			}
			return
		}
		sent += len(msg.slots)
	}
	n.log.Debug("cluster: seeded the new owner's backup with the handed-over keys", "backup", b.Name, "owner", owner.Name, "slots", sent)
}

// peerSeed is RL.PEER SEED from owner slots payload: keys of slots that
// node from has just handed over to owner, for this node as their backup
// (replica.Seed).
func (n *Node) peerSeed(x *core.Session, args [][]byte) {
	slots, ok := parseSlots(string(args[4]))
	if !ok {
		x.Out.WriteError(errSyntax)
		return
	}
	n.View() // the replicas' table first: the new owner's, if the membership has it
	kept, err := n.repl.Seed(string(args[3]), slots, args[5])
	if err != nil {
		x.Out.WriteError("ERR seed: " + err.Error())
		return
	}
	if kept > 0 {
		n.log.Info("cluster: keeps the keys an old owner handed over as the new owner's copies, until its full sync",
			"from", string(args[2]), "owner", string(args[3]), "slots", kept)
	}
	x.Out.WriteString("OK")
}
