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
// but for the ages and the incarnation. This build sends the second form
// too, and the first, to a member it has not yet heard the newer one from.
//
//	request: msgLeaseReq3, as msgLeaseReq2
//	answer:  msgLeaseAck3, sent (8 bytes), granted (1 byte), deaths (4 bytes),
//	         incarnation (8 bytes), n (2 bytes),
//	         n × (len (1 byte), fenced member, age (4 bytes)), name
//
// The third form's incarnation is the answering process's own random
// number (Lease.Incarnation): a rejoin's proof counts no member that
// restarted since this node last held its lease (lease_rejoin.go).

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
	a := leaseAnswer{sent: int64(binary.BigEndian.Uint64(sent)), deaths: m.lease.Deaths(name), from: m.cfg.NodeName}
	now := m.lease.Now()
	a.granted = m.lease.GrantsAt(now, name, alive, ack)
	if form >= 2 {
		a.fenced = m.lease.AppendFenced(nil)
	}
	if form == 3 {
		a.ages, a.inc = m.lease.GrantAgesAt(now, a.fenced), m.lease.Incarnation()
	}
	msg := appendLeaseAnswer(make([]byte, 0, 16+len(m.cfg.NodeName)), form, a)
	_ = ml.SendToAddress(memberlist.Address{Addr: gossip, Name: name}, msg)
}

// heardForm records that from answered in form, and reports whether the
// answer counts: an older form's answer, once from answered in a newer
// one, answers a request the newer one's answer also answers, and the
// newer ones count.
func (m *Membership) heardForm(from string, form int) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.forms[from] > form {
		return false
	}
	m.forms[from] = form
	return true
}

// takeAnswer records a member's answer to one of this node's requests, in
// its form.
func (m *Membership) takeAnswer(b []byte, form int) {
	recv := m.lease.Now()
	a, ok := parseLeaseAnswer(b, form)
	if !ok {
		return
	}
	from := a.from
	if from == "" || !m.cfg.Known.Has(from) || !m.heardForm(from, form) {
		return
	}
	if form >= 2 {
		m.lease.NoteGrantAgesAt(from, a.sent, recv, a.fenced, a.ages)
		m.lease.NoteFencesAt(from, a.sent, a.fenced)
	}
	known := m.cfg.Known.Members()
	names := make([]string, len(known))
	for i, k := range known {
		names[i] = k.Name
	}
	m.lease.NoteIncarnationAt(recv, from, a.sent, a.inc)
	m.lease.AnsweredAt(m.lease.Now(), from, a.sent, a.granted, a.deaths, names)
	if form >= 2 {
		m.confirmDeaths(names)
	}
}

// Lease is this node's serving lease.
func (m *Membership) Lease() *Lease { return m.lease }

// leaseAnswer is an answer to a lease request (see the forms above).
type leaseAnswer struct {
	sent    int64 // the request's send time, on the requester's clock
	granted bool
	deaths  uint32   // how many times the answering node saw the requester declared dead
	inc     uint64   // the third form: the answering process's incarnation (0: not told)
	fenced  []string // the second and third forms: the members the answering node fences
	ages    []int64  // the third form: how long ago it last granted each of fenced (whole milliseconds on the wire)
	from    string   // the answering node
}

// appendLeaseAnswer appends a's message in form (1, 2 or 3) to dst.
func appendLeaseAnswer(dst []byte, form int, a leaseAnswer) []byte {
	dst = append(dst, [...]byte{1: msgLeaseAck, 2: msgLeaseAck2, 3: msgLeaseAck3}[form])
	dst = binary.BigEndian.AppendUint64(dst, uint64(a.sent))
	if a.granted {
		dst = append(dst, 1)
	} else {
		dst = append(dst, 0)
	}
	dst = binary.BigEndian.AppendUint32(dst, a.deaths)
	if form == 3 {
		dst = binary.BigEndian.AppendUint64(dst, a.inc)
	}
	if form >= 2 {
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(a.fenced)))
		for i, f := range a.fenced {
			dst = append(dst, byte(len(f)))
			dst = append(dst, f...)
			if form == 3 {
				dst = binary.BigEndian.AppendUint32(dst, uint32(min(max(a.ages[i], 0)/int64(time.Millisecond), math.MaxUint32)))
			}
		}
	}
	return append(dst, a.from...)
}

// parseLeaseAnswer parses an answer's message in form, less its kind
// byte. A third-form answer's ages are never nil (see
// Lease.NoteGrantAgesAt).
func parseLeaseAnswer(b []byte, form int) (leaseAnswer, bool) {
	var a leaseAnswer
	if len(b) < 13 {
		return a, false
	}
	a.sent = int64(binary.BigEndian.Uint64(b))
	a.granted, a.deaths = b[8] == 1, binary.BigEndian.Uint32(b[9:])
	rest := b[13:]
	if form == 3 {
		if len(rest) < 8 {
			return a, false
		}
		a.inc, rest = binary.BigEndian.Uint64(rest), rest[8:]
	}
	if form >= 2 {
		if len(rest) < 2 {
			return a, false
		}
		n := int(binary.BigEndian.Uint16(rest))
		rest = rest[2:]
		if form == 3 {
			a.ages = []int64{}
		}
		for range n {
			if len(rest) < 1 || len(rest) < 1+int(rest[0]) {
				return a, false
			}
			a.fenced = append(a.fenced, string(rest[1:1+int(rest[0])]))
			rest = rest[1+int(rest[0]):]
			if form == 3 {
				if len(rest) < 4 {
					return a, false
				}
				a.ages = append(a.ages, int64(binary.BigEndian.Uint32(rest))*int64(time.Millisecond))
				rest = rest[4:]
			}
		}
	}
	a.from = string(rest)
	return a, true
}
