package cluster

import (
	"encoding/binary"
	"math"
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
//
// The third forms (msgLeaseReq3, msgLeaseAck3) add to each fenced member
// how long ago the answering node last granted it, in milliseconds
// (Lease.GrantAgesAt), so that the slots of a member that died wait only
// until its lease has run out (Lease.ConfirmedAt), not TakeoverWait from
// the confirmation. The request is the second form's; so is the answer
// but for the ages. This build sends the second form too, and the first,
// to a member it has not yet heard the newer one from.
//
//	request: msgLeaseReq3, as msgLeaseReq2
//	answer:  msgLeaseAck3, sent (8 bytes), granted (1 byte), deaths (4 bytes),
//	         n (2 bytes), n × (len (1 byte), fenced member, age (4 bytes)), name

// leaseForm is the form (1, 2 or 3) of a lease message of kind k.
func leaseForm(k byte) int {
	switch k {
	case msgLeaseReq2, msgLeaseAck2:
		return 2
	case msgLeaseReq3, msgLeaseAck3:
		return 3
	}
	return 1
}

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
		msg = append(msg[:0], msgLeaseReq3)
		msg = binary.BigEndian.AppendUint64(msg, uint64(now))
		msg = binary.BigEndian.AppendUint32(msg, m.lease.AckFor(k.Name))
		msg = append(msg, byte(len(self)))
		msg = append(msg, self...)
		msg = append(msg, m.cfg.NodeName...)
		_ = m.ml.SendToAddress(to, msg) // a lost one is sent again next round
		form := m.speaks(k.Name)
		if form < 3 {
			_ = m.ml.SendToAddress(to, append([]byte{msgLeaseReq2}, msg[1:]...))
		}
		if form < 2 {
			old := append([]byte{msgLeaseReq}, msg[1:9]...)
			old = append(old, msg[13:]...)
			_ = m.ml.SendToAddress(to, old)
		}
	}
}

// speaks is the newest form name has answered this node in: 0 before
// its first answer.
func (m *Membership) speaks(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.forms[name]
}

// answerLease answers a request: granted when this node counts the
// requester alive (or suspect, or leaving) and does not fence it (see
// Lease.Grants). form is the request's, which the answer takes.
func (m *Membership) answerLease(b []byte, form int) {
	ml := m.live.Load()
	var ack uint32
	if form >= 2 {
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
	kind := [...]byte{1: msgLeaseAck, 2: msgLeaseAck2, 3: msgLeaseAck3}[form]
	msg := make([]byte, 0, 16+len(m.cfg.NodeName))
	msg = append(msg, kind)
	msg = append(msg, sent...)
	now := m.lease.Now()
	if m.lease.GrantsAt(now, name, alive, ack) {
		msg = append(msg, 1)
	} else {
		msg = append(msg, 0)
	}
	msg = binary.BigEndian.AppendUint32(msg, m.lease.Deaths(name))
	if form >= 2 {
		fenced := m.lease.AppendFenced(nil)
		var ages []int64
		if form == 3 {
			ages = m.lease.GrantAgesAt(now, fenced)
		}
		msg = binary.BigEndian.AppendUint16(msg, uint16(len(fenced)))
		for i, f := range fenced {
			msg = append(msg, byte(len(f)))
			msg = append(msg, f...)
			if form == 3 {
				msg = binary.BigEndian.AppendUint32(msg, uint32(min(ages[i]/int64(time.Millisecond), math.MaxUint32)))
			}
		}
	}
	msg = append(msg, m.cfg.NodeName...)
	_ = ml.SendToAddress(memberlist.Address{Addr: gossip, Name: name}, msg)
}

// takeAnswer records a member's answer to one of this node's requests, in
// its form.
func (m *Membership) takeAnswer(b []byte, form int) {
	recv := m.lease.Now()
	if len(b) < 13 {
		return
	}
	sent := int64(binary.BigEndian.Uint64(b))
	granted, deaths := b[8] == 1, binary.BigEndian.Uint32(b[9:])
	rest := b[13:]
	var fenced []string
	var ages []int64
	if form >= 2 {
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
			if form == 3 {
				if len(rest) < 4 {
					return
				}
				ages = append(ages, int64(binary.BigEndian.Uint32(rest))*int64(time.Millisecond))
				rest = rest[4:]
			}
		}
		if form == 3 && ages == nil {
			ages = []int64{}
		}
	}
	from := string(rest)
	if from == "" || !m.cfg.Known.Has(from) {
		return
	}
	m.mu.Lock()
	newer := m.forms[from] > form
	if !newer {
		m.forms[from] = form
	}
	m.mu.Unlock()
	if newer {
		return // an older form's answer to a request the newer one's answer also answers: the newer ones count
	}
	if form >= 2 {
		m.lease.NoteGrantAgesAt(from, sent, recv, fenced, ages)
		m.lease.NoteFencesAt(from, sent, fenced)
	}
	known := m.cfg.Known.Members()
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = k.Name
	}
	m.lease.AnsweredAt(m.lease.Now(), from, sent, granted, deaths, names)
	if form >= 2 {
		m.confirmDeaths(names)
	}
}

// Lease is this node's serving lease.
func (m *Membership) Lease() *Lease { return m.lease }
