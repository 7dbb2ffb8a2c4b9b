package global

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strconv"
	"sync"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// A region made of a cluster (docs/regions.md) is one decider per key:
// each node's Store has the region's index and the node's name as its
// member, and decides the global keys of the slots it serves. One gateway
// per region, the lowest-named alive member, carries the exchanges with
// the other regions: a node's batches go to it (relay), it sends them on
// its link to the other region, and a batch that arrives is fanned out to
// the owners of its keys' slots (part) and answered with one merged
// acknowledgement. A node that starts serving a slot it did not serve
// takes a new epoch (region.Store.Gain) at its next sync, and denies that
// slot's global keys until every other region has echoed.

// Cluster is what a Node of a clustered region asks of its cluster.
type Cluster interface {
	// Topology returns the cluster's current membership view.
	Topology() Topology
	// Deciding returns, for the view and the handoff's state now, whether
	// this node decides a slot's keys: not while it takes the slot over
	// from its old owner (which decides them until the handoff's cut),
	// nor once it has handed it over, nor when the table gives the slot
	// to another node outside its copy phase.
	Deciding() func(slot int) bool
}

// Topology is one membership view, as a Node needs it.
type Topology struct {
	Self  string   // this node's name
	Names []string // the alive members, sorted by name: Names[0] is the gateway
	Addrs []string // their addresses, for the region links (RESP, or TLS with --tls-cluster)
	// Owner returns the index in Names of the member that owns key's
	// slot, or -1.
	Owner func(key []byte) int
	View  uint64 // the view's epoch
}

// The first byte of an RL.PEER REGION payload that is not a batch from
// another region (those start with their wire version, 2 to 4).
const (
	msgRelay byte = 0xF0 // a node's batch to its gateway: the region's name, then the batch
	msgPart  byte = 0xF1 // a gateway's fan-out to a slot's owner: the view, then the batch
)

// slots is a set of cluster slots.
type slots [cluster.Slots / 64]uint64

func (b *slots) has(s int) bool { return b[s/64]&(1<<(s%64)) != 0 }
func (b *slots) set(s int)      { b[s/64] |= 1 << (s % 64) }
func (b *slots) clear(s int)    { b[s/64] &^= 1 << (s % 64) }

// gate is a clustered Node's record of the slots it serves: served, those
// it decided a key of since it last came to own them; pending, those
// first decided since the last sync, whose pull (handoff.go) the next
// starts; pulling, those of the pulls not yet taken (pulls), which gain
// at the first sync after their pull is done (their keys are denied until
// then); gaining, those the last gains covered, whose keys are
// region.Store's fresh ones until the echoes come.
type gate struct {
	served, pending, pulling, gaining slots
	leaving                           slots // served, though the table gives them to another node: their copy phase (OnTable)
	anyPending                        bool
	pulls                             []*pull
}

// slotOf returns key's cluster slot.
func slotOf(key []byte) int { return cluster.Slot(policy.Route(key)) }

// gatedLocked reports whether a decision on key must wait: the node has
// not served its slot since it came to own it. The first such decision
// marks the slot pending: the next sync gains it.
func (rn *Node) gatedLocked(key []byte) bool {
	if rn.cfg.Cluster == nil {
		return false
	}
	s := slotOf(key)
	if !rn.gate.served.has(s) {
		rn.gate.served.set(s)
		rn.gate.pending.set(s)
		rn.gate.anyPending = true
		rn.nudge()
	}
	return rn.gate.pending.has(s) || rn.gate.pulling.has(s)
}

// recovering is a decision denied while the node gains the key's slot.
func (rn *Node) recovering(lim int64) window.Decision {
	return window.Decision{Limit: lim, Wait: rn.cfg.Sync}
}

// gainDue reports whether a slot waits for its pull or its gain (at the
// next sync).
func (rn *Node) gainDue() bool {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if rn.gate.anyPending {
		return true
	}
	for _, p := range rn.gate.pulls {
		if p.done {
			return true
		}
	}
	return false
}

// gainLocked takes a new epoch for the slots whose pull is done
// (region.Store.Gain), takes back their keys' units from the key store's
// copies, which the handoff or the replicas brought, and takes what the
// region's other nodes held of them (handoff.go).
func (rn *Node) gainLocked(now int64, view uint64) {
	if len(rn.gate.pulls) > 0 {
		rn.gainPulledLocked(now, view)
	}
}

// gainPulledLocked is gainLocked once some pull was started (its slot
// sets live on the heap: a sync with none allocates nothing).
func (rn *Node) gainPulledLocked(now int64, view uint64) {
	done, gained, any := rn.donePullsLocked()
	if len(done) == 0 {
		return
	}
	for _, p := range done {
		rn.store.Hold(-p.bytes) // taken below, or let go
	}
	if !any {
		return
	}
	if rn.st.Recovered() {
		rn.gate.gaining = slots{}
	}
	for i := range gained {
		rn.gate.gaining[i] |= gained[i]
	}
	g := &rn.gate.gaining
	var list []int
	for s := range cluster.Slots {
		if gained.has(s) {
			list = append(list, s)
		}
	}
	rn.st.Gain(now, view, func(key string) bool { return g.has(slotOf([]byte(key))) }, list)
	var es []shard.Entry
	for i := range rn.store.Shards() {
		es = rn.store.ExportShardFunc(i, func(key []byte) bool { return gained.has(slotOf(key)) }, es[:0])
		for _, e := range es {
			if k := e.Params.Kind; (k == window.KindSlide || k == window.KindFixed) && rn.Global(e.Key) {
				rn.st.Restore(region.Own{Key: string(e.Key), Params: e.Params, State: e.State, Counters: e.Counters})
			}
		}
	}
	in := func(key string) bool { return gained.has(slotOf([]byte(key))) }
	for _, p := range done {
		for _, h := range p.held {
			if h != nil {
				rn.taken.Add(int64(rn.st.Take(heldOf(h, in))))
			}
		}
	}
}

// OnTable takes a new membership view: a slot this node no longer owns is
// no longer served, so that if it comes back, its first decision gains it
// again; but one it still hands over (leaving: the handoff's copy, until
// the cut) it still decides, so it stays served until a later view finds
// it handed over (a slot that comes back after its cut comes with a new
// view). Before, the old owner's first decision in the copy phase gained
// the slot again: a round trip of denials, a pull, a new epoch for the
// other regions. The front calls it from the cluster's table-change hook.
func (rn *Node) OnTable(owns, leaving func(slot int) bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	for s := range cluster.Slots {
		switch {
		case !rn.gate.served.has(s):
		case rn.gate.leaving.has(s) && !leaving(s), !owns(s) && !leaving(s):
			rn.gate.served.clear(s)
			rn.gate.pending.clear(s)
			rn.gate.leaving.clear(s)
		case !owns(s):
			rn.gate.leaving.set(s)
		}
	}
}

// gatewayAddr returns where this node sends its batches: "" when it is
// its region's gateway (it sends them itself), else the gateway's address.
func (rn *Node) gatewayAddr() string {
	if rn.cfg.Cluster == nil {
		return ""
	}
	t := rn.cfg.Cluster.Topology()
	if len(t.Names) == 0 || t.Names[0] == t.Self {
		return ""
	}
	return t.Addrs[0]
}

// relayPayload wraps a batch for the gateway: carry it to region name.
func relayPayload(dst []byte, name string, batch []byte) []byte {
	dst = append(dst, msgRelay)
	dst = binary.AppendUvarint(dst, uint64(len(name)))
	dst = append(dst, name...)
	return append(dst, batch...)
}

// relay is the gateway's side of a relay: it carries a node's batch to
// the region it names and returns that region's acknowledgement.
func (rn *Node) relay(p []byte) ([]byte, string) {
	n, k := binary.Uvarint(p)
	if k <= 0 || uint64(len(p)-k) < n {
		return nil, rn.refuse("a malformed relay")
	}
	name, batch := string(p[k:k+int(n)]), p[k+int(n):]
	i, ok := rn.index[name]
	if !ok || rn.links[i] == nil {
		return nil, rn.refuse("a relay to unknown region " + strconv.Quote(name))
	}
	l := rn.links[i]
	if l.bundles() && rn.gatewayAddr() == "" {
		return rn.relayBundled(l, slices.Clone(batch)) // with the link's next exchange (bundle.go)
	}
	body, err := rn.call(l.target(), batch)
	if err != nil {
		l.rotate()
		return nil, err.Error()
	}
	if _, a, err := region.ReadAck(body); err == nil {
		l.learn(a.Addrs)
	}
	rn.relayed.Add(1)
	l.messages.Add(1)
	l.carried.Add(1)
	return body, ""
}

// call sends payload as RL.PEER REGION to addr and returns the bulk reply.
func (rn *Node) call(addr string, payload []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), rn.cfg.Timeout)
	defer cancel()
	reps, err := rn.cfg.Forwarder.Forward(ctx, addr, [][][]byte{{[]byte(cluster.PeerCommand), []byte(cluster.PeerRegion), payload}})
	if err != nil {
		return nil, err
	}
	return bulkReply(reps[0])
}

// fanOut is the receiving gateway's side: it splits a batch from another
// region among the owners of its keys' slots (every member gets the
// header), has each count its part, and merges their acknowledgements.
func (rn *Node) fanOut(h region.Header, b *region.Batch, idx int) (*region.Ack, string) {
	t := rn.cfg.Cluster.Topology()
	self := -1
	for i, n := range t.Names {
		if n == t.Self {
			self = i
		}
	}
	if len(t.Names) < 2 || self < 0 {
		b.View = t.View // every key is this node's: an echo answers a gain of this view
		return rn.receiveLocal(b, idx), ""
	}
	parts := region.Split(b, len(t.Names), func(key string) int { return t.Owner([]byte(key)) }, t.View)
	held := region.PartsBytes(parts) // in --maxmemory while the parts are out, with the acks' refusals
	rn.store.Hold(held)
	defer func() { rn.store.Hold(-held) }()
	acks := make([]*region.Ack, len(parts))
	var wg sync.WaitGroup
	for i := range parts {
		if i == self {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			buf = append(buf, msgPart)
			buf = binary.AppendUvarint(buf, t.View)
			buf = region.AppendBatch(buf, h, parts[i].Batch)
			body, err := rn.call(t.Addrs[i], buf)
			if err != nil {
				rn.partFails.Add(1)
				return // its entries are refused: the sender sends them again
			}
			if _, a, err := region.ReadAck(body); err == nil {
				acks[i] = a
			}
		}()
	}
	acks[self] = rn.receiveLocal(parts[self].Batch, idx)
	wg.Wait()
	refused := int64(0)
	for _, a := range acks {
		refused += region.RefusedBytes(a)
	}
	rn.store.Hold(refused)
	held += refused
	a := region.Merge(b, parts, acks)
	if a == nil {
		if len(b.EchoFor) > 0 {
			return nil, errEchoPart.Error()
		}
		return nil, ""
	}
	a.From, a.Addrs = rn.rc.Self, t.Addrs // so that the other regions reach the cluster through any node
	return a, ""
}

// target returns the address l sends to now: --region-peers' address, or
// another node of l's region that its acknowledgements named.
func (l *link) target() string {
	if p := l.cur.Load(); p != nil {
		return (*p)[0]
	}
	return l.addr
}

// learn keeps the addresses l's region named in an acknowledgement.
func (l *link) learn(addrs []string) {
	if len(addrs) == 0 {
		return
	}
	if p := l.alts.Load(); p != nil && slices.Equal(*p, addrs) {
		return
	}
	c := slices.Clone(addrs)
	l.alts.Store(&c)
}

// rotate moves l to the next address of its region it knows, after the
// one it sends to stopped answering.
func (l *link) rotate() {
	list := []string{l.addr}
	if p := l.alts.Load(); p != nil {
		for _, a := range *p {
			if !slices.Contains(list, a) {
				list = append(list, a)
			}
		}
	}
	if len(list) < 2 {
		return
	}
	next := []string{list[(slices.Index(list, l.target())+1)%len(list)]}
	l.cur.Store(&next)
}

// part is an owner's side of the fan-out: it counts its part of a batch.
func (rn *Node) part(p []byte, overTLS bool) ([]byte, string) {
	view, k := binary.Uvarint(p)
	if k <= 0 {
		return nil, rn.refuse("a malformed part")
	}
	h, b, idx, refusal := rn.readBatch(p[k:], overTLS)
	if refusal != "" {
		return nil, refusal
	}
	b.View = view
	a := rn.receiveLocal(b, idx)
	if msg := refusedAck(a, h.Version); msg != "" {
		return nil, rn.refuse(msg)
	}
	if a.Missed {
		return nil, errEchoView.Error() // the gateway fails the batch: its sender echoes again (region.Merge)
	}
	return region.AppendAck(nil, h.Version, rn.cfg.Name, a), ""
}

// Errors of a fan-out whose echo a node did not take: the sender echoes
// again after --region-sync's retry, as when the exchange fails.
var (
	errEchoView = errors.New("ERR region sync: an echo fanned out under a view older than this node's gain of its slots")
	errEchoPart = errors.New("ERR region sync: a node of this region did not take its part of an echo (its view is older, or it did not answer)")
)

// errNotClustered refuses a relay or a part at a node of no cluster.
var errNotClustered = errors.New("a relay or part at a region of one node")
