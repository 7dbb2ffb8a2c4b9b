package cluster

import "time"

// MemberState is what a member is doing, as this node last heard.
type MemberState int

// The member states. Left and Dead members appear in a View only in Gone.
const (
	StateAlive   MemberState = iota // serving, and owns slots
	StateLeaving                    // said it is leaving: owns no slot, but still serves those it is handing over
	StateLeft                       // left gracefully
	StateDead                       // stopped answering: failure detection declared it dead
)

func (s MemberState) String() string {
	switch s {
	case StateAlive:
		return "alive"
	case StateLeaving:
		return "leaving"
	case StateLeft:
		return "left"
	}
	return "dead"
}

// Member is a node and how it is doing.
type Member struct {
	Node
	Gossip string // host:port of its gossip
	State  MemberState
	Since  time.Time // when this node saw it reach State
}

// View is one membership snapshot: who is there and who owns what. It is
// immutable; Membership makes a new one on every change.
type View struct {
	Self    string   // this node's name
	Table   *Table   // slot owners, among the alive members (never the leaving ones)
	Members []Member // alive and leaving members, this node included, sorted by name
	Gone    []Member // members that left or died since the previous view
	// Waiting is true while this node, started with seeds or remembered
	// members, has not yet met another member: it must not serve keyed
	// commands, its table being one of itself only (see Config.Bootstrap).
	Waiting bool
}

// Member returns the alive or leaving member called name.
func (v *View) Member(name string) (Member, bool) {
	for _, m := range v.Members {
		if m.Name == name {
			return m, true
		}
	}
	return Member{}, false
}

// TLSAddr returns the TLS address advertised by the member whose RESP
// address is addr, for PeersConfig.TLSAddr.
func (v *View) TLSAddr(addr string) (string, bool) {
	for _, m := range v.Members {
		if m.Addr == addr {
			return m.TLSAddr, m.TLSAddr != ""
		}
	}
	return "", false
}
