package route

import (
	"slices"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// epochNames is how many names a known member set may have held,
// tombstones included, for the config epochs to stay distinct: see
// configEpochs.
const epochNames = 1 << 20

// configEpochs returns each name's config epoch: a function of the known
// member set's entries alone (cluster.Known.All, tombstones included), so
// that nodes that agree on the set agree on the epochs, and no clock
// moves them. A name's epoch is its entry's version × epochNames + its
// rank by name. A version only grows (a member's return, leave, new
// gossip address or forget raises it; a restart at its address changes
// nothing), and names are never dropped, so a new name only pushes later
// ranks up: no epoch goes backwards on a node. Ranks differ, so no two
// epochs are equal while the set holds fewer than epochNames names.
func configEpochs(known []cluster.KnownMember) map[string]uint64 {
	out := make(map[string]uint64, len(known))
	for rank, m := range known {
		out[m.Name] = m.Version*epochNames + uint64(rank)
	}
	return out
}

// knownOf returns the known member set's entries, tombstones included,
// sorted by name, with an entry of version 1 for each member or owner in
// v the set does not hold yet: a member enters the set as it is seen, a
// moment after it enters the view (and a server built on a view alone,
// as the tests', has no set).
func (rt *Router) knownOf(v *cluster.View) []cluster.KnownMember {
	var ks []cluster.KnownMember
	if rt.cfg.KnownSet != nil {
		ks = rt.cfg.KnownSet()
	}
	have := make(map[string]bool, len(ks))
	for _, k := range ks {
		have[k.Name] = true
	}
	add := func(name string) {
		if !have[name] {
			have[name] = true
			ks = append(ks, cluster.KnownMember{Name: name, Version: 1})
		}
	}
	for _, m := range v.Members {
		add(m.Name)
	}
	for _, n := range v.Table.Nodes() {
		add(n.Name)
	}
	slices.SortFunc(ks, func(a, b cluster.KnownMember) int { return strings.Compare(a.Name, b.Name) })
	return ks
}

// nodesText is CLUSTER NODES' text and the config epochs for one view
// and one known member set.
type nodesText struct {
	known  []cluster.KnownMember
	epochs map[string]uint64
	text   []byte
}

// nodesOf returns v's CLUSTER NODES text and epochs, from the cache while
// neither the view nor the known set changed.
func (rt *Router) nodesOf(v *cluster.View) *nodesText {
	topo, known := rt.topologyOf(v), rt.knownOf(v)
	if nt := topo.nodes.Load(); nt != nil && slices.Equal(nt.known, known) {
		return nt
	}
	nt := &nodesText{known: known, epochs: configEpochs(known)}
	nt.text = appendClusterNodes(nil, v, nt, topo.addrs)
	topo.nodes.Store(nt)
	return nt
}

// rememberAddrs returns the RESP address of every node prev or v names,
// v's winning: CLUSTER NODES writes a dead member at its last one.
func rememberAddrs(prev map[string]string, v *cluster.View) map[string]string {
	out := make(map[string]string, len(prev)+len(v.Members))
	for name, a := range prev {
		out[name] = a
	}
	for _, m := range v.Gone {
		out[m.Name] = m.Addr
	}
	for _, n := range v.Table.Nodes() {
		out[n.Name] = n.Addr
	}
	for _, m := range v.Members {
		out[m.Name] = m.Addr
	}
	return out
}

// appendClusterNodes appends CLUSTER NODES' text, a line per known
// member: id ip:port@cport flags master ping-sent pong-recv config-epoch
// link-state slots. The bus port (cport) is the member's gossip port. A
// member this node declared dead while no majority confirmed it is
// "fail?" (Redis's PFAIL) and keeps its slots; one that is in the known
// set but neither a member nor an owner here (its death confirmed, or not
// met since this node started) is "fail"; both are "disconnected".
// Members that left, or were forgotten, are not listed.
func appendClusterNodes(b []byte, v *cluster.View, nt *nodesText, addrs map[string]string) []byte {
	gossip := map[string]string{}
	for _, k := range nt.known {
		gossip[k.Name] = k.Gossip
	}
	alive := map[string]bool{}
	for _, m := range v.Members {
		alive[m.Name], gossip[m.Name] = true, m.Gossip
	}
	for _, k := range nt.known {
		_, owner := v.Table.Node(k.Name)
		flags, link := "master", " connected"
		switch {
		case alive[k.Name]:
		case owner:
			flags, link = "master,fail?", " disconnected"
		case k.Gone:
			continue
		default:
			flags, link = "master,fail", " disconnected"
		}
		if k.Name == v.Self {
			flags = "myself," + flags
		}
		b = appendNodeAddr(append(append(b, NodeID(k.Name)...), ' '), addrs[k.Name], gossip[k.Name], &flags)
		b = append(append(append(b, ' '), flags...), " - 0 0 "...)
		b = strconv.AppendUint(b, nt.epochs[k.Name], 10)
		b = append(b, link...)
		for _, r := range v.Table.Ranges(k.Name) {
			b = strconv.AppendInt(append(b, ' '), int64(r.From), 10)
			if r.To != r.From {
				b = strconv.AppendInt(append(b, '-'), int64(r.To), 10)
			}
		}
		b = append(b, '\n')
	}
	return b
}

// appendNodeAddr appends ip:port@cport; with no RESP address known it
// appends Redis's ":0@cport" and adds "noaddr" to flags.
func appendNodeAddr(b []byte, addr, gossip string, flags *string) []byte {
	host, port := SplitAddr(addr)
	if addr == "" {
		*flags += ",noaddr"
	}
	_, cport := SplitAddr(gossip)
	b = append(b, host...)
	b = strconv.AppendInt(append(b, ':'), int64(port), 10)
	return strconv.AppendInt(append(b, '@'), int64(cport), 10)
}

// slotStates counts the slots v gives this node and it can serve (ok),
// those it cannot (fail: it holds no lease, or the slot is lost or waits
// out a dead owner's lease, or it imports the slot and no node serves
// its requests, see handoff.ImportDown), and those of another node this
// node declared dead while no majority confirmed it (pfail), as CLUSTER
// INFO's cluster_slots_ok, _fail and _pfail. A node that waits to meet a
// member serves none.
func (rt *Router) slotStates(v *cluster.View) (ok, pfail, fail int) {
	if v.Waiting {
		return 0, 0, cluster.Slots
	}
	serving, tk, now := true, (*cluster.Takeover)(nil), int64(0)
	if rt.ho != nil {
		serving, tk = rt.ho.Serving(), rt.ho.Takeover()
		if l := rt.ho.Lease(); l != nil {
			now = l.Now()
		}
	}
	alive := map[string]bool{}
	for _, m := range v.Members {
		alive[m.Name] = true
	}
	for _, n := range v.Table.Nodes() {
		for _, r := range v.Table.Ranges(n.Name) {
			size := r.To - r.From + 1
			switch {
			case n.Name != v.Self && !alive[n.Name]:
				pfail += size
			case n.Name != v.Self:
				ok += size
			case !serving:
				fail += size
			default:
				for slot := r.From; slot <= r.To; slot++ {
					if tk.Waits(slot, now) || rt.ho != nil && rt.ho.ImportDown(slot) {
						fail++
					} else {
						ok++
					}
				}
			}
		}
	}
	return ok, pfail, fail
}

// clusterInfoPairs are CLUSTER INFO's fields. cluster_state is "fail"
// while this node serves no key: until it meets a member, and while it
// holds no lease (see server/internal/handoff, lease.go).
func (rt *Router) clusterInfoPairs(v *cluster.View) []core.Pair {
	nt := rt.nodesOf(v)
	var current uint64
	for _, e := range nt.epochs {
		current = max(current, e)
	}
	state := "ok"
	if v.Waiting || (rt.ho != nil && !rt.ho.Serving()) {
		state = "fail"
	}
	ok, pfail, fail := rt.slotStates(v)
	return []core.Pair{
		{Key: "cluster_state", Val: state}, {Key: "cluster_slots_assigned", Val: cluster.Slots}, {Key: "cluster_slots_ok", Val: ok},
		{Key: "cluster_slots_pfail", Val: pfail}, {Key: "cluster_slots_fail", Val: fail}, {Key: "cluster_known_nodes", Val: len(v.Members)},
		{Key: "cluster_size", Val: len(v.Table.Nodes())}, {Key: "cluster_current_epoch", Val: current}, {Key: "cluster_my_epoch", Val: nt.epochs[v.Self]},
	}
}
