package cluster

import (
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Candidates appends slot's nodes to dst in the order they would serve
// it: its owner, its runner-up, then the others by descending rendezvous
// score for the slot (ties to the earlier name). Every node computes the
// same order from the same table, so nodes that agree on which members
// are out of reach agree on the first candidate left: the one node that
// decides a slot's keys for them when its owner cannot (see
// --owner-unreachable local in docs/cluster.md).
func (t *Table) Candidates(slot int, dst []Node) []Node {
	own, second := int(t.owner[slot]), int(t.second[slot])
	dst = append(dst, t.nodes[own])
	if second != own {
		dst = append(dst, t.nodes[second])
	}
	from := len(dst)
	for i, n := range t.nodes {
		if i != own && i != second {
			dst = append(dst, n)
		}
	}
	rest := dst[from:]
	scores := make(map[string]uint64, len(rest))
	for _, n := range rest {
		scores[n.Name] = score(slot, xxhash.Sum64String(n.Name))
	}
	slices.SortStableFunc(rest, func(a, b Node) int {
		sa, sb := scores[a.Name], scores[b.Name]
		switch {
		case sa > sb:
			return -1
		case sa < sb:
			return 1
		}
		return 0 // nodes are sorted by name, and the sort is stable
	})
	return dst
}
