package cluster

import (
	"encoding/binary"
	"time"

	"github.com/hashicorp/memberlist"
)

// The lease's messages go over memberlist's packets (UDP, encrypted with
// the cluster's key when there is one), outside its gossip:
//
//	request: msgLeaseReq, sent (8 bytes), len(gossip) (1 byte), gossip, name
//	answer:  msgLeaseAck, sent (8 bytes), granted (1 byte), deaths (4 bytes), name
//
// sent is the requester's lease clock, echoed back; gossip is where to
// answer, since a member declared dead is no longer in memberlist's list;
// deaths is how many times the answering node saw the requester declared
// dead (see Lease.OnDeclaredDead).

// leaseLoop asks every known member for a grant, five times a term.
func (m *Membership) leaseLoop() {
	defer m.done.Done()
	t := time.NewTicker(m.cfg.Timing.Lease / 5)
	defer t.Stop()
	for {
		m.requestLease()
		select {
		case <-m.stop:
			return
		case <-t.C:
		case <-m.leaseKick:
		}
	}
}

// kickLease asks for a round of requests now: the known set changed, so
// the quorum did, and the deadline is recomputed against it at once.
func (m *Membership) kickLease() {
	select {
	case m.leaseKick <- struct{}{}:
	default:
	}
}

// requestLease sends one round of requests.
func (m *Membership) requestLease() {
	known := m.cfg.Known.Members()
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = k.Name
	}
	now := m.lease.Now()
	m.lease.SentAt(now, names)
	self := m.GossipAddr()
	msg := make([]byte, 0, 10+len(self)+len(m.cfg.NodeName))
	msg = append(msg, msgLeaseReq)
	msg = binary.BigEndian.AppendUint64(msg, uint64(now))
	msg = append(msg, byte(len(self)))
	msg = append(msg, self...)
	msg = append(msg, m.cfg.NodeName...)
	for _, k := range known {
		if k.Name != m.cfg.NodeName && k.Gossip != "" {
			_ = m.ml.SendToAddress(memberlist.Address{Addr: k.Gossip, Name: k.Name}, msg) // a lost one is sent again next round
		}
	}
}

// answerLease answers a request: granted when this node counts the
// requester alive (or suspect, or leaving).
func (m *Membership) answerLease(b []byte) {
	ml := m.live.Load()
	if ml == nil || len(b) < 9 || len(b) < 9+int(b[8]) {
		return
	}
	sent, gossip, name := b[:8], string(b[9:9+int(b[8])]), string(b[9+int(b[8]):])
	if name == "" || gossip == "" {
		return
	}
	m.mu.Lock()
	_, alive := m.nodes[name]
	m.mu.Unlock()
	msg := make([]byte, 0, 14+len(m.cfg.NodeName))
	msg = append(msg, msgLeaseAck)
	msg = append(msg, sent...)
	if alive {
		msg = append(msg, 1)
	} else {
		msg = append(msg, 0)
	}
	msg = binary.BigEndian.AppendUint32(msg, m.lease.Deaths(name))
	msg = append(msg, m.cfg.NodeName...)
	_ = ml.SendToAddress(memberlist.Address{Addr: gossip, Name: name}, msg)
}

// takeAnswer records a member's answer to one of this node's requests.
func (m *Membership) takeAnswer(b []byte) {
	if len(b) < 14 {
		return
	}
	sent := int64(binary.BigEndian.Uint64(b))
	granted, deaths, from := b[8] == 1, binary.BigEndian.Uint32(b[9:]), string(b[13:])
	if !m.cfg.Known.Has(from) {
		return
	}
	known := m.cfg.Known.Members()
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = k.Name
	}
	m.lease.AnsweredAt(m.lease.Now(), from, sent, granted, deaths, names)
}

// Lease is this node's serving lease.
func (m *Membership) Lease() *Lease { return m.lease }
