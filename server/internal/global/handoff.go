package global

import (
	"slices"
	"sync"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/region"
)

// A node that gains slots asks the region's other nodes for what they
// hold of the slots' global keys (msgPull) and takes it before it decides
// them (region.Store.Hand, Take): the old owner, alive, keeps the keys it
// handed over with their units, the units it admitted after its last sync
// included, which neither the key store's copy nor any other region had.
// The handoff's cut comes before the new owner's first decision of a slot
// (until it, the new owner sends the slot's requests back to the old
// owner), so what the old owner holds then is final. A node that does not
// answer (the old owner died: a failover) gives nothing, and the gain goes
// on with what the copies and the echoes bring, as before. docs/regions.md,
// "A region made of a cluster".

// msgPull asks a node of this region for its entries of some slots: the
// slots follow (region.AppendSlots); the reply is region.AppendHeld's.
const msgPull byte = 0xF3

// pull is one gain's ask of the region's other nodes: the slots first
// decided since a sync, and, once every node answered or failed, what
// they held. Its slots' keys are denied until the gain takes it.
type pull struct {
	slots slots
	list  []int
	held  []*region.Held // by node asked; nil where it did not answer
	done  bool
	bytes int64 // held's, counted in --maxmemory until the gain takes it
}

// startPullsLocked moves the slots first decided since the last sync to a
// pull of the other alive nodes of t. With no other node, the pull is
// done at once.
func (rn *Node) startPullsLocked(t Topology) {
	if !rn.gate.anyPending {
		return
	}
	p := &pull{slots: rn.gate.pending}
	for s := range cluster.Slots {
		if p.slots.has(s) {
			p.list = append(p.list, s)
		}
	}
	rn.gate.pending, rn.gate.anyPending = slots{}, false
	rn.gate.pulls = append(rn.gate.pulls, p)
	rn.gate.pullingLocked()
	var addrs []string
	for i, n := range t.Names {
		if n != t.Self {
			addrs = append(addrs, t.Addrs[i])
		}
	}
	if len(addrs) == 0 {
		p.done = true
		return
	}
	go rn.pull(p, addrs)
}

// pull asks every node at addrs for what it holds of p's slots, at once,
// and marks p done for the next sync.
func (rn *Node) pull(p *pull, addrs []string) {
	payload := region.AppendSlots([]byte{msgPull}, p.list)
	held := make([]*region.Held, len(addrs))
	var wg sync.WaitGroup
	for i, addr := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, err := rn.call(addr, payload)
			if err != nil {
				rn.pullFails.Add(1)
				return // a node that died, or of an older version: the gain goes on without it
			}
			if h, err := region.ReadHeld(body); err == nil {
				held[i] = h
			}
		}()
	}
	wg.Wait()
	var n int64
	for _, h := range held {
		if h != nil {
			n += region.HeldBytes(h)
		}
	}
	rn.store.Hold(n) // until the gain takes it
	rn.mu.Lock()
	p.held, p.done, p.bytes = held, true, n
	rn.mu.Unlock()
	rn.nudge()
}

// pullingLocked recomputes the slots of the pulls not yet taken.
func (g *gate) pullingLocked() {
	g.pulling = slots{}
	for _, p := range g.pulls {
		for i := range p.slots {
			g.pulling[i] |= p.slots[i]
		}
	}
}

// donePullsLocked takes the pulls that are done off the gate and returns
// them, with the slots they gain: those still served here and in no pull
// still under way (that one gains them when it is done).
func (rn *Node) donePullsLocked() (done []*pull, gained slots, any bool) {
	var keep []*pull
	for _, p := range rn.gate.pulls {
		if p.done {
			done = append(done, p)
		} else {
			keep = append(keep, p)
		}
	}
	if len(done) == 0 {
		return nil, slots{}, false
	}
	rn.gate.pulls = keep
	rn.gate.pullingLocked()
	for _, p := range done {
		for i := range p.slots {
			gained[i] |= p.slots[i] & rn.gate.served[i] &^ rn.gate.pulling[i]
			any = any || gained[i] != 0
		}
	}
	return done, gained, any
}

// hand is a node's side of a pull: what it holds of the slots asked.
func (rn *Node) hand(p []byte) ([]byte, string) {
	list, err := region.ReadSlots(p)
	if err != nil {
		return nil, rn.refuse("a malformed pull")
	}
	var want slots
	for _, s := range list {
		want.set(s)
	}
	rn.mu.Lock()
	h := rn.st.Hand(func(key string) bool { return want.has(slotOf([]byte(key))) })
	rn.mu.Unlock()
	rn.handed.Add(1)
	return region.AppendHeld(nil, h), ""
}

// heldOf returns h with only the keys in reports.
func heldOf(h *region.Held, in func(key string) bool) *region.Held {
	out := &region.Held{Seen: make([][]region.Entry, len(h.Seen))}
	for _, e := range h.Own {
		if in(e.Key) {
			out.Own = append(out.Own, e)
		}
	}
	for p, es := range h.Seen {
		for _, e := range es {
			if in(e.Key) {
				out.Seen[p] = append(out.Seen[p], e)
			}
		}
	}
	return out
}

// A node counts and acknowledges the other regions' entries only of the
// slots it decides now. A slot's new owner gets their entries (the
// fan-out goes by the table) from the table's change on, while the old
// owner still decides them until the handoff's cut; a part fanned out by
// an older view may reach the old owner after its cut; a leaver hands its
// slots over before the table names their new owner. Were the node that
// does not decide the key to acknowledge such entries, the other region
// would take them as counted by this region, though the node that
// decides the key never saw them: each would admit on top of the other.
// So such entries are refused (Ack.Refused): they stay unacknowledged at
// their sender, within its escrow, and it sends them again after Retry
// (to the decider, by then), or all at once at the new owner's gain.

// notImporting returns b without the entries of slots this node does not
// decide now (Cluster.Deciding), and their indexes in b (ascending); b
// itself when it has none.
func (rn *Node) notImporting(b *region.Batch) (*region.Batch, []int) {
	if rn.cfg.Cluster == nil || len(b.Entries) == 0 {
		return b, nil
	}
	deciding := rn.cfg.Cluster.Deciding()
	var importing []int
	for i := range b.Entries {
		if !deciding(slotOf([]byte(b.Entries[i].Key))) {
			importing = append(importing, i)
		}
	}
	if len(importing) == 0 {
		return b, nil
	}
	c := *b
	c.Entries = make([]region.Entry, 0, len(b.Entries)-len(importing))
	next := 0
	for i, e := range b.Entries {
		if next < len(importing) && importing[next] == i {
			next++
			continue
		}
		c.Entries = append(c.Entries, e)
	}
	rn.importRefused.Add(int64(len(importing)))
	return &c, importing
}

// refusedToo maps refused, indexes into notImporting's batch's entries,
// back to the original batch's, and adds importing (the original's
// indexes of the entries left out): the batch's refused entries, ascending.
func refusedToo(refused, importing []int) []int {
	out := make([]int, 0, len(refused)+len(importing))
	// kept's entry j is the batch's j + (how many importing come before it).
	k := 0
	for _, j := range refused {
		for k < len(importing) && importing[k] <= j+k {
			k++
		}
		out = append(out, j+k)
	}
	out = append(out, importing...)
	slices.Sort(out)
	return out
}
