package shard

import "github.com/rlstore/rlstore/window"

// params interns the parameters keys use, so a slot names them with a 4-byte id:
// most keys of a shard share a handful of limits. Id 0 is never handed out.
//
// An entry no key uses any more stays interned, idle, until more than
// maxIdleParams have gone idle: a shard whose only key of some parameters
// comes and goes (a lease key taken and released, a ledger made and
// settled, each pair of commands) would otherwise delete and insert a map
// entry each time. Then every idle entry goes at once, so entries stay
// bounded by the live ones plus maxIdleParams.
type params struct {
	list []paramEntry
	ids  map[window.Params]uint32
	free []uint32
	idle []uint32 // ids that went idle since the last drop, each once, some maybe in use again
	last uint32   // the id acquire returned last: most keys of a shard share it
}

// maxIdleParams bounds the entries a shard keeps interned with no users:
// past it, every entry then idle goes. An entry that comes and goes is
// dropped only once that many others went idle since the last drop.
const maxIdleParams = 64

type paramEntry struct {
	p      window.Params
	refs   int
	inIdle bool // in params.idle
}

// get returns the parameters with id.
func (t *params) get(id uint32) window.Params { return t.list[id].p }

// acquire returns the id of p, adding it if new, and counts one more user.
func (t *params) acquire(p window.Params) uint32 {
	if t.last != 0 { // interned still, unless dropped: a dropped entry is zeroed
		if e := &t.list[t.last]; e.p == p && (e.refs > 0 || p != window.Params{}) {
			e.refs++
			return t.last
		}
	}
	if id, ok := t.ids[p]; ok {
		t.last = id
		t.list[id].refs++
		return id
	}
	if t.ids == nil {
		t.ids = make(map[window.Params]uint32)
		t.list = make([]paramEntry, 1, 8)
	}
	var id uint32
	if n := len(t.free); n > 0 {
		id, t.free = t.free[n-1], t.free[:n-1]
	} else {
		id = uint32(len(t.list))
		t.list = append(t.list, paramEntry{})
	}
	t.list[id] = paramEntry{p: p, refs: 1}
	t.ids[p] = id
	t.last = id
	return id
}

// release counts one user fewer of id; an entry left with none stays
// idle (see params) until too many went idle.
func (t *params) release(id uint32) {
	if t.list[id].refs--; t.list[id].refs > 0 {
		return
	}
	if e := &t.list[id]; !e.inIdle {
		e.inIdle = true
		t.idle = append(t.idle, id)
	}
	if len(t.idle) > maxIdleParams {
		t.dropIdle()
	}
}

// dropIdle drops every idle entry that no key uses again since.
func (t *params) dropIdle() {
	for _, id := range t.idle {
		e := &t.list[id]
		e.inIdle = false
		if got, ok := t.ids[e.p]; e.refs == 0 && ok && got == id {
			delete(t.ids, e.p)
			*e = paramEntry{}
			t.free = append(t.free, id)
		}
	}
	t.idle = t.idle[:0]
}

// live returns how many entries keys use.
func (t *params) live() int { return len(t.ids) - t.idleCount() }

// idleCount returns how many interned entries no key uses.
func (t *params) idleCount() (n int) {
	for _, id := range t.ids {
		if t.list[id].refs == 0 {
			n++
		}
	}
	return n
}
