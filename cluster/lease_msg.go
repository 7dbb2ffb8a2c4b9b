package cluster

import (
	"encoding/binary"
	"time"

	"github.com/hashicorp/memberlist"
)

// The lease's messages go over memberlist's packets (UDP, encrypted with
// the cluster's key when there is one), outside its gossip:
//
//	request: msgLeaseReq2, sent (8 bytes), ack (4 bytes), len(gossip) (1 byte), gossip, name
//	answer:  msgLeaseAck2, sent (8 bytes), granted (1 byte), deaths (4 bytes),
//	         n (2 bytes), n × (len (1 byte), fenced member), name
//
// sent is the requester's lease clock, echoed back; ack is how many of
// its deaths the answering node reported that the requester acknowledges
// (Lease.AckFor); gossip is where to answer, since a member declared dead
// is no longer in memberlist's list; deaths is how many times the
// answering node saw the requester declared dead (see
// Lease.OnDeclaredDead), and the fenced members are those it refuses until
// they acknowledge their deaths (Lease.Grants). The first forms
// (msgLeaseReq, msgLeaseAck), of builds before fences, lack ack and the
// fenced members: this build answers one as a request acknowledging no
// death, and sends one, besides the new, to a member it has not yet heard
// the new form from.
//
//	request: msgLeaseReq, sent (8 bytes), len(gossip) (1 byte), gossip, name
//	answer:  msgLeaseAck, sent (8 bytes), granted (1 byte), deaths (4 bytes), name

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
	var msg []byte
	for _, k := range known {
		if k.Name == m.cfg.NodeName || k.Gossip == "" {
			continue
		}
		to := memberlist.Address{Addr: k.Gossip, Name: k.Name}
		msg = append(msg[:0], msgLeaseReq2)
		msg = binary.BigEndian.AppendUint64(msg, uint64(now))
		msg = binary.BigEndian.AppendUint32(msg, m.lease.AckFor(k.Name))
		msg = append(msg, byte(len(self)))
		msg = append(msg, self...)
		msg = append(msg, m.cfg.NodeName...)
		_ = m.ml.SendToAddress(to, msg) // a lost one is sent again next round
		if !m.speaks2(k.Name) {
			old := append([]byte{msgLeaseReq}, msg[1:9]...)
			old = append(old, msg[13:]...)
			_ = m.ml.SendToAddress(to, old)
		}
	}
}

// speaks2 reports whether name has answered this node in the second form.
func (m *Membership) speaks2(name string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.v2[name]
	return ok
}

// answerLease answers a request: granted when this node counts the
// requester alive (or suspect, or leaving) and does not fence it (see
// Lease.Grants). v2 is the request's form, which the answer takes.
func (m *Membership) answerLease(b []byte, v2 bool) {
	ml := m.live.Load()
	var ack uint32
	if v2 {
		if len(b) < 12 {
			return
		}
		ack = binary.BigEndian.Uint32(b[8:12])
		b = append(b[:8:8], b[12:]...)
	}
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
	kind := msgLeaseAck
	if v2 {
		kind = msgLeaseAck2
	}
	msg := make([]byte, 0, 16+len(m.cfg.NodeName))
	msg = append(msg, kind)
	msg = append(msg, sent...)
	if m.lease.Grants(name, alive, ack) {
		msg = append(msg, 1)
	} else {
		msg = append(msg, 0)
	}
	msg = binary.BigEndian.AppendUint32(msg, m.lease.Deaths(name))
	if v2 {
		fenced := m.lease.AppendFenced(nil)
		msg = binary.BigEndian.AppendUint16(msg, uint16(len(fenced)))
		for _, f := range fenced {
			msg = append(msg, byte(len(f)))
			msg = append(msg, f...)
		}
	}
	msg = append(msg, m.cfg.NodeName...)
	_ = ml.SendToAddress(memberlist.Address{Addr: gossip, Name: name}, msg)
}

// takeAnswer records a member's answer to one of this node's requests, in
// the form v2 says.
func (m *Membership) takeAnswer(b []byte, v2 bool) {
	if len(b) < 13 {
		return
	}
	sent := int64(binary.BigEndian.Uint64(b))
	granted, deaths := b[8] == 1, binary.BigEndian.Uint32(b[9:])
	rest := b[13:]
	var fenced []string
	if v2 {
		if len(rest) < 2 {
			return
		}
		n := int(binary.BigEndian.Uint16(rest))
		rest = rest[2:]
		for range n {
			if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
				return
			}
			fenced = append(fenced, string(rest[1:1+int(rest[0])]))
			rest = rest[1+int(rest[0]):]
		}
	}
	from := string(rest)
	if from == "" || !m.cfg.Known.Has(from) {
		return
	}
	if v2 {
		m.mu.Lock()
		m.v2[from] = struct{}{}
		m.mu.Unlock()
		m.lease.NoteFencesAt(from, sent, fenced)
	} else if m.speaks2(from) {
		return // the old form's answer to a request sent before the new one's came: the new ones count
	}
	known := m.cfg.Known.Members()
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = k.Name
	}
	m.lease.AnsweredAt(m.lease.Now(), from, sent, granted, deaths, names)
	if v2 {
		m.confirmDeaths(names)
	}
}

// Lease is this node's serving lease.
func (m *Membership) Lease() *Lease { return m.lease }
