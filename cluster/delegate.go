package cluster

import (
	"strings"

	"github.com/hashicorp/memberlist"
)

// StateSync is state that every node should hold, such as rlstore's
// policies, carried as bytes this package does not read. Merge must be
// idempotent and commutative (last writer wins by version, say): a message
// may arrive twice, late, or after a newer full state. Both run on
// memberlist's goroutines, from New on, and must not block.
type StateSync interface {
	LocalState() []byte // everything this node holds, for a push/pull exchange
	Merge(b []byte)     // a broadcast or another node's LocalState
}

// Message kinds, the first byte of a user message. Append only.
const (
	msgLeaving   byte = 1 // followed by the leaving node's name
	msgState     byte = 2 // followed by StateSync bytes
	msgKnown     byte = 3 // followed by AppendKnown's encoding of the sender's known set
	msgLeaseReq  byte = 4 // a request for a lease grant: see lease_msg.go
	msgLeaseAck  byte = 5 // its answer
	msgLeaseReq2 byte = 6 // a request that acknowledges deaths: see lease_msg.go
	msgLeaseAck2 byte = 7 // its answer, with the members the answering node fences
	msgLeaseReq3 byte = 8 // the second form's request, answered in the third form
	msgLeaseAck3 byte = 9 // the second form's answer, with when each fenced member was last granted
)

// delegate is memberlist's hook into this package. Its methods run on
// memberlist's goroutines and must not block.
type delegate struct{ m *Membership }

// NodeMeta is the RESP address, then a space and the TLS address if there
// is one; a node that knows only the first form reads "resp tls" as one
// address, so a mixed cluster should not turn --tls-cluster on.
func (d delegate) NodeMeta(limit int) []byte {
	meta := encodeMeta(Node{Addr: d.m.cfg.RESPAddr, TLSAddr: d.m.cfg.TLSAddr})
	if len(meta) > limit {
		return nil
	}
	return meta
}

func encodeMeta(n Node) []byte {
	if n.TLSAddr == "" {
		return []byte(n.Addr)
	}
	return []byte(n.Addr + " " + n.TLSAddr)
}

// nodeFromMeta is the Node that name's metadata describes.
func nodeFromMeta(name string, meta []byte) Node {
	resp, tls, _ := strings.Cut(string(meta), " ")
	return Node{Name: name, Addr: resp, TLSAddr: tls}
}

func (d delegate) NotifyMsg(b []byte) {
	if len(b) == 0 {
		return
	}
	switch b[0] {
	case msgLeaving:
		d.m.markLeaving(string(b[1:]))
	case msgLeaseReq, msgLeaseReq2, msgLeaseReq3:
		d.m.answerLease(b[1:], leaseForm(b[0]))
	case msgLeaseAck, msgLeaseAck2, msgLeaseAck3:
		d.m.takeAnswer(b[1:], leaseForm(b[0]))
	case msgKnown:
		if ms, err := ParseKnown(b[1:]); err == nil && d.m.cfg.Known.Merge(ms) {
			d.m.kickLease()
		}
	case msgState:
		if d.m.cfg.State != nil {
			d.m.cfg.State.Merge(append([]byte(nil), b[1:]...)) // b is memberlist's buffer
		}
	}
}

func (d delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.m.bq.GetBroadcasts(overhead, limit)
}

func (d delegate) LocalState(join bool) []byte {
	if d.m.cfg.State == nil {
		return nil
	}
	return d.m.cfg.State.LocalState()
}

func (d delegate) MergeRemoteState(buf []byte, join bool) {
	if d.m.cfg.State != nil && len(buf) > 0 {
		d.m.cfg.State.Merge(append([]byte(nil), buf...))
	}
}

// events turns memberlist's membership events into view rebuilds.
type events struct{ m *Membership }

func (e events) NotifyJoin(n *memberlist.Node)   { e.m.seen(n) }
func (e events) NotifyUpdate(n *memberlist.Node) { e.m.seen(n) }
func (e events) NotifyLeave(n *memberlist.Node)  { e.m.departed(n) }

// broadcast is one queued gossip message.
type broadcast []byte

func (b broadcast) Invalidates(memberlist.Broadcast) bool { return false }
func (b broadcast) Message() []byte                       { return b }
func (b broadcast) Finished()                             {}
