package core

import (
	"sort"
	"sync"
	"sync/atomic"
)

// Meta is what a client says about itself, for CLIENT LIST: its name
// (CLIENT SETNAME, HELLO's SETNAME), its library (CLIENT SETINFO) and its
// protocol (HELLO).
type Meta struct {
	Name, LibName, LibVer string
	Resp                  int
}

// Meta returns what x said about itself; any goroutine may ask.
func (x *Session) Meta() Meta {
	x.metaMu.Lock()
	defer x.metaMu.Unlock()
	return x.meta
}

// SetMeta changes what x said about itself.
func (x *Session) SetMeta(f func(m *Meta)) {
	x.metaMu.Lock()
	defer x.metaMu.Unlock()
	f(&x.meta)
}

// Kill closes x's socket from any goroutine; x's own goroutine then finds
// it closed (CLIENT KILL).
func (x *Session) Kill() { _ = x.Conn.Guard().Close() }

// Registry is the connected clients' sessions, by ID, and the counts of
// those gone, which INFO sums with the live ones'. Its methods are safe
// for concurrent use: CLIENT LIST and KILL, INFO and the replies' budget
// reach every session from other goroutines.
type Registry struct {
	next atomic.Int64

	mu      sync.Mutex // guards byID and the gone counts
	byID    map[int64]*Session
	goneCmd int64 // commands run by sessions that have gone
	goneIn  int64 // bytes read from them
	goneOut int64 // bytes written to them
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{byID: map[int64]*Session{}} }

// NewID returns the ID of a new connection: 1, 2, … in the order they came.
func (r *Registry) NewID() int64 { return r.next.Add(1) }

// Add registers x, whose ID and Conn are set.
func (r *Registry) Add(x *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byID[x.ID] = x
}

// Remove forgets x, whose connection has ended, keeping its counts.
func (r *Registry) Remove(x *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byID, x.ID)
	r.goneCmd += x.Cmds.Load()
	r.goneIn += x.Conn.NetIn()
	r.goneOut += x.Conn.NetOut()
}

// Get returns the session with the ID, or nil.
func (r *Registry) Get(id int64) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.byID[id]
}

// Len returns how many sessions are registered.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// List returns the sessions not killed, in the order they connected. A
// killed one is gone for CLIENT LIST and KILL at once, as in Redis,
// though its goroutine may not have ended.
func (r *Registry) List() []*Session {
	r.mu.Lock()
	list := make([]*Session, 0, len(r.byID))
	for _, x := range r.byID {
		if !x.Conn.Guard().Closed() {
			list = append(list, x)
		}
	}
	r.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	return list
}

// Commands returns the commands run by every session, live or gone.
func (r *Registry) Commands() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.goneCmd
	for _, x := range r.byID {
		n += x.Cmds.Load()
	}
	return n
}

// NetBytes returns the bytes read from and written to every session, live or gone.
func (r *Registry) NetBytes() (in, out int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	in, out = r.goneIn, r.goneOut
	for _, x := range r.byID {
		in += x.Conn.NetIn()
		out += x.Conn.NetOut()
	}
	return in, out
}

// Largest returns the session whose connection holds the most replies,
// and how many bytes, or nil if none holds any. Peers are spared: their
// replies are other clients'.
func (r *Registry) Largest() (*Session, int64) {
	var victim *Session
	most := int64(0)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.byID {
		if h := x.Conn.Held(); h > most && !x.Peer && !x.Conn.Evicted() {
			victim, most = x, h
		}
	}
	return victim, most
}
