package server

import (
	"container/heap"
	"time"
)

// A tracked key's state expires by itself, with no command to announce it:
// the server keeps the expiries of the keys clients read in a heap and a
// timer set for the earliest, and invalidates each key whose state has
// expired, as Redis does when it expires a key.

// expiry is one entry of expiryHeap. A key read again after a change has a
// newer entry; the older one no longer matches trackedKey.expiry and is skipped.
type expiry struct {
	at  int64 // unix nanoseconds
	key string
}

type expiryHeap []expiry

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiry)) }
func (h *expiryHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// armLocked sets the timer for the earliest expiry, if it is not set sooner.
func (o *observers) armLocked(s *Server) {
	if len(o.expiries) == 0 {
		return
	}
	at := o.expiries[0].at
	if o.timerAt != 0 && o.timerAt <= at {
		return
	}
	o.timerAt = at
	d := time.Duration(at - s.unixNano())
	if o.timer == nil {
		o.timer = time.AfterFunc(d, func() { s.expireTracked() })
		return
	}
	o.timer.Reset(d)
}

// expireTracked invalidates every tracked key whose state has expired, and
// sets the timer for the next.
func (s *Server) expireTracked() {
	o := &s.obs
	now := s.unixNano()
	var gone []string
	o.mu.Lock()
	o.timerAt = 0
	for len(o.expiries) > 0 && o.expiries[0].at <= now {
		e := heap.Pop(&o.expiries).(expiry)
		if tk := o.keys[e.key]; tk != nil && tk.expiry == e.at {
			gone = append(gone, e.key)
		}
	}
	o.armLocked(s)
	o.mu.Unlock()
	for _, k := range gone {
		s.invalidate(nil, []byte(k))
	}
}
