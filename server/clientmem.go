package server

import (
	"math"
	"sync/atomic"
)

// DefaultMaxMemoryClients bounds the replies all clients together may hold,
// as redis.conf's maxmemory-clients does: 4 of the largest replies one
// client may hold (DefaultClientOutputLimit).
const DefaultMaxMemoryClients = 256 << 20

// clientMemChunk is the step in which a connection's replies are counted
// toward the budget: the hot path compares one length, and the shared
// counter is touched once per 64 KiB of replies a batch builds.
const clientMemChunk = 64 << 10

// clientMem is the budget for replies over all clients (--maxmemory-clients).
// Each connection counts the replies of the batch it is building, in
// chunks (respConn.held), while they are built and until they are written;
// a client that does not read holds them until its socket takes them. Past
// the budget, the clients holding the most are closed first, as Redis's
// client eviction does, until the rest fit.
type clientMem struct {
	s       *Server
	max     int64        // 0: no budget
	held    atomic.Int64 // bytes counted by every connection
	leaving atomic.Int64 // of held, the bytes of clients closed and not yet gone
	evicted atomic.Int64 // clients closed for the budget, for INFO's evicted_clients
}

// mark is the length of a connection's replies at which it must next count
// more, or check its own limit.
func (m *clientMem) mark(rc *respConn) int64 {
	next := int64(math.MaxInt64)
	if m != nil && m.max > 0 {
		next = rc.held.Load() + clientMemChunk
	}
	if rc.limit > 0 {
		next = min(next, rc.limit)
	}
	return next
}

// grow counts rc's replies up to their length, and closes the clients
// holding the most while all hold more than the budget.
func (m *clientMem) grow(rc *respConn) {
	if m == nil || m.max <= 0 {
		return
	}
	n := (int64(len(rc.out)) + clientMemChunk - 1) / clientMemChunk * clientMemChunk
	if d := n - rc.held.Load(); d > 0 {
		rc.held.Store(n)
		m.held.Add(d)
	}
	for m.held.Load()-m.leaving.Load() > m.max {
		if !m.evictLargest(rc) {
			return
		}
	}
}

// release takes rc's replies off the budget once they are written or dropped.
func (m *clientMem) release(rc *respConn) {
	if m == nil {
		return
	}
	m.held.Add(-rc.held.Swap(0))
	m.leaving.Add(-rc.leaving.Swap(0))
}

// evictLargest closes the client holding the most replies, and reports
// whether it found one to close. The connection of self drops its
// replies at once; another's socket is closed, which ends its write.
// Peers' connections are spared: their replies are other clients'.
func (m *clientMem) evictLargest(self *respConn) bool {
	var victim *client
	most := int64(0)
	m.s.mu.Lock()
	for _, c := range m.s.clients {
		if h := c.rc.held.Load(); h > most && !c.peer && !c.rc.evicted.Load() {
			victim, most = c, h
		}
	}
	m.s.mu.Unlock()
	if victim == nil || !victim.rc.evicted.CompareAndSwap(false, true) {
		return victim != nil
	}
	victim.rc.leaving.Add(most)
	m.leaving.Add(most)
	m.evicted.Add(1)
	m.s.log.Warn("client closed: the replies of all clients passed --maxmemory-clients; closing those holding the most first",
		"client", victim.id, "addr", victim.addr, "held", most, "maxmemory_clients", m.max)
	if victim.rc == self {
		self.overflow()
		return true
	}
	_ = victim.g.Close()
	return true
}
