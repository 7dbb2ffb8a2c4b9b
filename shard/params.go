package shard

import "github.com/rlstore/rlstore/window"

// params interns the parameters keys use, so a slot names them with a 4-byte id:
// most keys of a shard share a handful of limits. Id 0 is never handed out.
type params struct {
	list []paramEntry
	ids  map[window.Params]uint32
	free []uint32
}

type paramEntry struct {
	p    window.Params
	refs int
}

// get returns the parameters with id.
func (t *params) get(id uint32) window.Params { return t.list[id].p }

// acquire returns the id of p, adding it if new, and counts one more user.
func (t *params) acquire(p window.Params) uint32 {
	if id, ok := t.ids[p]; ok {
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
	return id
}

// release counts one user fewer of id, dropping the entry when none is left.
func (t *params) release(id uint32) {
	e := &t.list[id]
	if e.refs--; e.refs == 0 {
		delete(t.ids, e.p)
		*e = paramEntry{}
		t.free = append(t.free, id)
	}
}
