package cluster

import (
	"errors"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// ringSeed is mixed into every rendezvous score. shard/ picks a key's local
// shard with plain xxhash; a different seed keeps the two choices
// independent, so that a node's slots do not crowd into some of its shards.
const ringSeed = 0x9e3779b97f4a7c15

// Chunks is how many blocks of consecutive slots the table deals out:
// chunk c is the slots from c×Slots/Chunks up to (c+1)×Slots/Chunks, 21 or
// 22 of them. Slots move in chunks, so that a node owns a few hundred runs
// of slots at most and CLUSTER SLOTS stays small.
const Chunks = 768

// chunkStart is the first slot of chunk c; chunkStart(Chunks) is Slots.
func chunkStart(c int) int { return c * Slots / Chunks }

// Node is a member as the slot table sees it.
type Node struct {
	Name string // unique in the cluster; the rendezvous hash is over it
	Addr string // host:port of its RESP listener, where clients and peers connect
	// TLSAddr is host:port of its TLS listener, where peers connect with
	// --tls-cluster; empty when it advertises none.
	TLSAddr string
	// PerSlot says the node computes only the per-slot assignment of the
	// builds before chunks (it advertises delegate protocol 0 at most; see
	// tableProtocol): a table with such a member deals slots out that way,
	// so that every member computes the same owners during a rolling upgrade.
	PerSlot bool
}

// Table maps every slot to its owner and to its runner-up, the owner it
// would have without that owner. Slots go in chunks of ChunkSlots by
// rendezvous hashing with bounded loads (see assign): every node owns
// ⌊Chunks/N⌋ or ⌈Chunks/N⌉ chunks. Every node computes the same table from
// the same nodes. A Table is immutable once made, so it is safe for
// concurrent use; a membership change makes a new one, with a higher epoch.
type Table struct {
	epoch   uint64
	nodes   []Node // sorted by name
	perSlot bool   // dealt out slot by slot, for a member of an older build (see Node.PerSlot)
	owner   [Slots]uint16
	second  [Slots]uint16 // == owner when there is one node
	ranges  [][]Range     // each node's runs of slots, indexed as nodes
}

// ErrNoNodes is NewTable's error for an empty member list.
var ErrNoNodes = errors.New("cluster: a table needs at least one node")

// MaxNodes bounds a table's members; chunks index them with 16 bits.
const MaxNodes = 1 << 16

// NewTable computes the table of nodes, whose names must be unique.
func NewTable(epoch uint64, nodes []Node) (*Table, error) {
	switch {
	case len(nodes) == 0:
		return nil, ErrNoNodes
	case len(nodes) > MaxNodes:
		return nil, errors.New("cluster: too many nodes for a table")
	}
	t := &Table{epoch: epoch, nodes: slices.Clone(nodes)}
	slices.SortFunc(t.nodes, func(a, b Node) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(t.nodes); i++ {
		if t.nodes[i].Name == t.nodes[i-1].Name {
			return nil, errors.New("cluster: node name " + t.nodes[i].Name + " appears twice")
		}
	}
	for _, n := range t.nodes {
		t.perSlot = t.perSlot || n.PerSlot
	}
	if t.perSlot {
		t.fillPerSlot()
	} else {
		t.fill()
	}
	t.ranges = t.runs()
	return t, nil
}

// fill computes every chunk's owner, then its runner-up: its owner in the
// table of the nodes less that owner, computed the same way. The runner-up
// is thus exactly where a chunk goes when its owner dies or leaves, which
// the replicas and the handoff rely on.
func (t *Table) fill() {
	p := newPrefs(t.nodes)
	owner := p.assign(-1)
	second := owner
	if len(t.nodes) > 1 {
		owns := make([]bool, len(t.nodes))
		for _, o := range owner {
			owns[o] = true
		}
		for o, ok := range owns {
			if !ok {
				continue
			}
			without := p.assign(o)
			for c := range Chunks {
				if int(owner[c]) == o {
					second[c] = without[c]
				}
			}
		}
	}
	for c := range Chunks {
		for s := chunkStart(c); s < chunkStart(c+1); s++ {
			t.owner[s], t.second[s] = owner[c], second[c]
		}
	}
}

// fillPerSlot is the assignment of the builds before chunks: each slot's
// owner is the node with the highest rendezvous score xxhash(slot, name),
// its runner-up the second highest, scores compared with the node's index
// as the tie-break.
func (t *Table) fillPerSlot() {
	hs := make([]uint64, len(t.nodes))
	for i, n := range t.nodes {
		hs[i] = xxhash.Sum64String(n.Name)
	}
	for s := range Slots {
		var best, next uint64
		bi, ni := 0, 0
		for i, h := range hs {
			sc := score(s, h)
			switch {
			case i == 0 || sc > best:
				next, ni = best, bi
				best, bi = sc, i
			case i == 1 || sc > next:
				next, ni = sc, i
			}
		}
		t.owner[s], t.second[s] = uint16(bi), uint16(ni)
	}
}

// PerSlot reports whether the table deals slots out one by one, as builds
// before chunks did, because a member computes only that.
func (t *Table) PerSlot() bool { return t.perSlot }

// runs returns each node's runs of consecutive slots, in slot order.
func (t *Table) runs() [][]Range {
	rs := make([][]Range, len(t.nodes))
	for s, o := range t.owner {
		if n := len(rs[o]); n > 0 && rs[o][n-1].To == s-1 {
			rs[o][n-1].To = s
		} else {
			rs[o] = append(rs[o], Range{s, s})
		}
	}
	return rs
}

// Epoch orders tables: a later membership view has a higher epoch.
func (t *Table) Epoch() uint64 { return t.epoch }

// Nodes returns the members, sorted by name. The caller must not change it.
func (t *Table) Nodes() []Node { return t.nodes }

// Owner returns the node that owns slot.
func (t *Table) Owner(slot int) Node { return t.nodes[t.owner[slot]] }

// RunnerUp returns the node that would own slot without its owner, and
// false when the table has one node.
func (t *Table) RunnerUp(slot int) (Node, bool) {
	return t.nodes[t.second[slot]], len(t.nodes) > 1
}

// Has reports whether a node called name is a member.
func (t *Table) Has(name string) bool {
	_, ok := t.index(name)
	return ok
}

// Node returns the member called name.
func (t *Table) Node(name string) (Node, bool) {
	i, ok := t.index(name)
	if !ok {
		return Node{}, false
	}
	return t.nodes[i], true
}

func (t *Table) index(name string) (int, bool) {
	return slices.BinarySearchFunc(t.nodes, name, func(n Node, name string) int { return strings.Compare(n.Name, name) })
}

// Range is the slots From through To, both included.
type Range struct{ From, To int }

// Ranges returns the runs of consecutive slots that name owns, in order.
// The caller must not change it.
func (t *Table) Ranges(name string) []Range {
	i, ok := t.index(name)
	if !ok {
		return nil
	}
	return t.ranges[i]
}

// Count returns how many slots each node owns, indexed as Nodes.
func (t *Table) Count() []int {
	c := make([]int, len(t.nodes))
	for _, o := range t.owner {
		c[o]++
	}
	return c
}

// Moves returns the slots whose owner differs between from and t, with
// their old and new owners' names.
func (t *Table) Moves(from *Table) []Move {
	var ms []Move
	for s := range Slots {
		o, n := from.Owner(s).Name, t.Owner(s).Name
		if o != n {
			ms = append(ms, Move{Slot: s, From: o, To: n})
		}
	}
	return ms
}

// Move is one slot changing owner.
type Move struct {
	Slot     int
	From, To string
}
