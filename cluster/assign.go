package cluster

import (
	"container/heap"
	"encoding/binary"
	"math"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// prefs holds every chunk's nodes in order of preference: by descending
// rendezvous score xxhash(chunk, name), ties to the lower index (the
// earlier name).
type prefs struct {
	n     int
	score []uint64 // [chunk*n + node]
	order []uint16 // [chunk*n + rank]: node indices, best first
}

func newPrefs(nodes []Node) *prefs {
	n := len(nodes)
	p := &prefs{n: n, score: make([]uint64, Chunks*n), order: make([]uint16, Chunks*n)}
	hs := make([]uint64, n)
	for i, nd := range nodes {
		hs[i] = xxhash.Sum64String(nd.Name)
	}
	for c := range Chunks {
		sc, ord := p.score[c*n:(c+1)*n], p.order[c*n:(c+1)*n]
		for i, h := range hs {
			sc[i], ord[i] = score(c, h), uint16(i)
		}
		slices.SortFunc(ord, func(a, b uint16) int { return cmpPair(sc[a], a, sc[b], b) })
	}
	return p
}

// cmpPair orders (score, node) pairs best first.
func cmpPair(sa uint64, a uint16, sb uint64, b uint16) int {
	switch {
	case sa != sb && sa > sb:
		return -1
	case sa != sb:
		return 1
	}
	return int(a) - int(b)
}

// score is the rendezvous score of chunk (or, for a per-slot table, of a
// slot) for the node whose name hashes to h.
func score(chunk int, h uint64) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(chunk)^ringSeed)
	binary.LittleEndian.PutUint64(b[8:], h)
	return xxhash.Sum64(b[:])
}

// Bounds of a node's share: it owns between (1-slack)×Slots/N and
// (1+slack)×Slots/N slots, and never less than minSlack chunks off the
// ideal share; see assign.
const (
	slack    = 0.06
	minSlack = 2 * Slots / Chunks
)

// assign deals the chunks out to the nodes but skip (-1 for none):
// rendezvous hashing with bounded loads. Every (chunk, node) pair is taken
// in order of score, highest first, and the chunk goes to the node unless
// the chunk is placed already, the node holds its most slots (hi), or the
// node holds its fewest (lo) and the chunks left are needed to bring the
// others up to theirs. Both bounds only ever close, so a heap of chunks
// keyed by their best pair not yet tried walks the pairs in that order
// without sorting all of them, and a pair turned down is never retried.
//
// Chunks go to the node they score highest for while that stays within
// the bounds, so most of a node's chunks are those plain rendezvous
// hashing would give it: the slack absorbs the binomial spread of a
// join's or leave's moves among the other nodes, and only the chunks
// beyond it move a second time (see TestSimulation).
func (p *prefs) assign(skip int) [Chunks]uint16 {
	live := p.n
	if skip >= 0 {
		live--
	}
	q := float64(Slots) / float64(live)
	d := max(q*slack, minSlack)
	lo, hi := int(math.Max(q-d, 0)), int(math.Ceil(q+d))
	deficit, left := lo*live, Slots
	count := make([]int, p.n)
	h := &chunkHeap{p: p}
	for c := range Chunks {
		h.items = append(h.items, chunkRank{chunk: uint16(c)})
	}
	heap.Init(h)
	var out [Chunks]uint16
	for h.Len() > 0 {
		it := &h.items[0]
		nd := p.order[int(it.chunk)*p.n+int(it.rank)]
		size := chunkStart(int(it.chunk)+1) - chunkStart(int(it.chunk))
		under := count[nd] < lo
		if int(nd) == skip || count[nd] >= hi || !under && left-size < deficit {
			it.rank++
			heap.Fix(h, 0)
			continue
		}
		if under {
			deficit -= min(size, lo-count[nd])
		}
		left -= size
		count[nd] += size
		out[it.chunk] = nd
		heap.Pop(h)
	}
	return out
}

// chunkRank is a chunk not yet placed and the rank of its next node to try.
type chunkRank struct{ chunk, rank uint16 }

// chunkHeap is a max-heap of chunks by their next pair's score.
type chunkHeap struct {
	p     *prefs
	items []chunkRank
}

func (h *chunkHeap) Len() int { return len(h.items) }
func (h *chunkHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	na, nb := h.node(a), h.node(b)
	n := h.p.n
	if c := cmpPair(h.p.score[int(a.chunk)*n+int(na)], na, h.p.score[int(b.chunk)*n+int(nb)], nb); c != 0 {
		return c < 0
	}
	return a.chunk < b.chunk
}
func (h *chunkHeap) node(it chunkRank) uint16 { return h.p.order[int(it.chunk)*h.p.n+int(it.rank)] }
func (h *chunkHeap) Swap(i, j int)            { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *chunkHeap) Push(x any)               { h.items = append(h.items, x.(chunkRank)) }
func (h *chunkHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}
