package observe

import (
	"container/heap"
	"slices"
	"time"
)

// A tracked key's state expires by itself, with no command to announce it:
// the server keeps the expiries of the keys clients read in a heap and a
// timer set for the earliest, and invalidates each key whose state has
// expired, as Redis does when it expires a key.
//
// BCAST clients read nothing the server remembers: they hear of every key
// under their prefixes. So a key written under a broadcast prefix is
// watched: it has one entry in the heap, at its expiry when it was first
// written. When that entry comes due the key is looked up again; if writes
// have pushed its expiry later, the entry moves there, else its expiry is
// broadcast. A key written a million times a second costs one heap entry.

// expiry is one entry of expiryHeap. A key read again after a change has a
// newer entry; the older one no longer matches trackedKey.expiry and is skipped.
type expiry struct {
	at    int64 // unix nanoseconds
	key   string
	bcast bool // a watched key (Observers.watched), not one a client read
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
func (o *Observers) armLocked() {
	if len(o.expiries) == 0 {
		return
	}
	at := o.expiries[0].at
	if o.timerAt != 0 && o.timerAt <= at {
		return
	}
	o.timerAt = at
	d := time.Duration(at - o.d.UnixNano())
	if o.timer == nil {
		o.timer = time.AfterFunc(d, o.expireTracked)
		return
	}
	o.timer.Reset(d)
}

// expireTracked invalidates every tracked key whose state has expired, and
// sets the timer for the next.
func (o *Observers) expireTracked() {
	now := o.d.UnixNano()
	var gone []string
	o.mu.Lock()
	o.timerAt = 0
	for len(o.expiries) > 0 && o.expiries[0].at <= now {
		e := heap.Pop(&o.expiries).(expiry)
		switch {
		case e.bcast:
			if o.expiredWatchLocked(e.key, now) && !slices.Contains(gone, e.key) {
				gone = append(gone, e.key)
			}
		case o.keys[e.key] != nil && o.keys[e.key].expiry == e.at:
			if !slices.Contains(gone, e.key) {
				gone = append(gone, e.key)
			}
		}
	}
	o.armLocked()
	o.mu.Unlock()
	for _, k := range gone {
		o.Invalidate(nil, []byte(k))
	}
}

// bcastTargetsLocked appends the BCAST clients with a prefix of key.
func (o *Observers) bcastTargetsLocked(key []byte, dst []*Client) []*Client {
	for _, b := range o.bcast {
		if conf := b.trackConf.Load(); conf != nil && matchesPrefix(conf.prefixes, key) {
			dst = append(dst, b)
		}
	}
	return dst
}

// watchLocked watches key, just written under a broadcast prefix, for its
// expiry. The store is read under o.mu (no shard lock is ever held while
// o.mu is taken), so that a write racing the expiry's entry cannot go unwatched.
func (o *Observers) watchLocked(key []byte) {
	if _, ok := o.watched[string(key)]; ok {
		return
	}
	exp, live := o.d.Lookup(key, o.d.UnixNano())
	if !live {
		return
	}
	if len(o.watched) >= maxTrackedKeys {
		o.unwatchOneLocked()
	}
	o.watched[string(key)] = struct{}{}
	heap.Push(&o.expiries, expiry{at: exp, key: string(key), bcast: true})
	o.armLocked()
}

// expiredWatchLocked reports whether the watched key's state has expired,
// and stops watching it if so; if writes have pushed its expiry later,
// its entry moves there. With no BCAST client left it stops watching.
func (o *Observers) expiredWatchLocked(key string, now int64) bool {
	exp, live := o.d.Lookup([]byte(key), now)
	if live && len(o.bcast) > 0 {
		heap.Push(&o.expiries, expiry{at: exp, key: key, bcast: true})
		return false
	}
	delete(o.watched, key)
	return !live
}

// unwatchOneLocked stops watching a key to make room, broadcasting it now:
// an early invalidation costs a client one read, a missed one a stale cache.
func (o *Observers) unwatchOneLocked() {
	for k := range o.watched {
		delete(o.watched, k)
		targets := o.bcastTargetsLocked([]byte(k), nil)
		go o.sendInvalidations(targets, []byte(k)) // o.mu is held: send from elsewhere
		return
	}
}
