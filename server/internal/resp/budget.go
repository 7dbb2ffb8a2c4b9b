package resp

import (
	"math"
	"sync/atomic"
)

// budgetChunk is the step in which a connection's replies are counted
// toward the budget: the hot path compares one length, and the shared
// counter is touched once per 64 KiB of replies a batch builds.
const budgetChunk = 64 << 10

// Budget is the budget for replies over all clients (--maxmemory-clients).
// Each connection counts the replies of the batch it is building, in
// chunks (Conn.Held), while they are built and until they are written;
// a client that does not read holds them until its socket takes them. Past
// the budget, Evict is asked to close the clients holding the most first,
// as Redis's client eviction does, until the rest fit. Max and Evict are
// set before the first connection; a nil *Budget counts nothing.
type Budget struct {
	Max int64 // 0: no budget
	// Evict closes the client holding the most replies, through Take, and
	// reports whether it found one; self is the connection that grew. The
	// server sets it: only it knows every client, and which are spared.
	Evict func(self *Conn) bool

	held    atomic.Int64 // bytes counted by every connection
	leaving atomic.Int64 // of held, the bytes of clients closed and not yet gone
	evicted atomic.Int64 // clients closed for the budget, for INFO's evicted_clients
}

// Held returns the bytes of replies counted over all connections.
func (m *Budget) Held() int64 { return m.held.Load() }

// Evicted returns how many clients the budget closed.
func (m *Budget) Evicted() int64 { return m.evicted.Load() }

// mark is the length of a connection's replies at which it must next count
// more, or check its own limit.
func (m *Budget) mark(rc *Conn) int64 {
	next := int64(math.MaxInt64)
	if m != nil && m.Max > 0 {
		next = rc.held.Load() + budgetChunk
	}
	if rc.limit > 0 {
		next = min(next, rc.limit)
	}
	return next
}

// grow counts rc's replies up to their length, and closes the clients
// holding the most while all hold more than the budget.
func (m *Budget) grow(rc *Conn) {
	if m == nil || m.Max <= 0 {
		return
	}
	n := (int64(len(rc.out)) + budgetChunk - 1) / budgetChunk * budgetChunk
	if d := n - rc.held.Load(); d > 0 {
		rc.held.Store(n)
		m.held.Add(d)
	}
	for m.held.Load()-m.leaving.Load() > m.Max {
		if !m.Evict(rc) {
			return
		}
	}
}

// release takes rc's replies off the budget once they are written or dropped.
func (m *Budget) release(rc *Conn) {
	if m == nil {
		return
	}
	m.held.Add(-rc.held.Swap(0))
	m.leaving.Add(-rc.leaving.Swap(0))
}

// Take closes victim, which holds most bytes of replies, for the budget,
// and reports whether it was not closed for it already. If victim is self,
// the connection that grew, it drops its replies at once; another's socket
// is closed, which ends its write.
func (m *Budget) Take(victim, self *Conn, most int64) bool {
	if !victim.evicted.CompareAndSwap(false, true) {
		return false
	}
	victim.leaving.Add(most)
	m.leaving.Add(most)
	m.evicted.Add(1)
	if victim == self {
		self.overflow()
		return true
	}
	_ = victim.g.Close()
	return true
}
