package server

import "github.com/rlstore/rlstore/server/internal/resp"

// DefaultMaxMemoryClients bounds the replies all clients together may hold,
// as redis.conf's maxmemory-clients does: 4 of the largest replies one
// client may hold (DefaultClientOutputLimit).
const DefaultMaxMemoryClients = 256 << 20

// newBudget returns the budget of all clients' replies (resp.Budget), which
// closes the client holding the most first once they pass max.
func (s *Server) newBudget(max int64) *resp.Budget {
	return &resp.Budget{Max: max, Evict: s.evictLargest}
}

// evictLargest closes the client holding the most replies, and reports
// whether it found one to close. Peers' connections are spared: their
// replies are other clients'.
func (s *Server) evictLargest(self *resp.Conn) bool {
	var victim *client
	most := int64(0)
	s.mu.Lock()
	for _, c := range s.clients {
		if h := c.rc.Held(); h > most && !c.Peer && !c.rc.Evicted() {
			victim, most = c, h
		}
	}
	s.mu.Unlock()
	if victim == nil || !s.mem.Take(victim.rc, self, most) {
		return victim != nil
	}
	s.log.Warn("client closed: the replies of all clients passed --maxmemory-clients; closing those holding the most first",
		"client", victim.id, "addr", victim.addr, "held", most, "maxmemory_clients", s.mem.Max)
	return true
}
