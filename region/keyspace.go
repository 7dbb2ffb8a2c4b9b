package region

import (
	"time"

	"github.com/rlstore/rlstore/window"
)

// A global key is a key of the region's keyspace too: the key store holds
// the units this region admitted of it, as a SLIDE or FIXED key's state,
// so that DEL, TYPE, SCAN, DBSIZE, --max-keys, snapshots and the log see
// it as any other key. The Store stays the authority for decisions; the
// key store's copy follows it every sync (DrainOwn), and is what a region
// takes back after a restart (Restore).

// Own is a key's own units in the key store's form: Params of its limit,
// and a FIXED key's State or a SLIDE key's Counters, as window keeps them.
type Own struct {
	Key      string
	Params   window.Params
	State    window.State
	Counters []uint64
}

// changed marks key name's own units changed: to send, measure and copy.
func (s *Store) changed(name string) {
	s.dirty[name] = struct{}{}
	s.measure[name] = struct{}{}
	s.mirror[name] = struct{}{}
	for p := range s.peers {
		if p != s.cfg.Self {
			s.peers[p].unacked[name] = struct{}{}
		}
	}
}

// Has reports whether key name has state here.
func (s *Store) Has(name []byte) bool { return s.keys[string(name)] != nil }

// DrainOwn appends the own units of every key that changed since the last
// call, in the key store's form, and forgets that they changed. A key whose
// own units no window counts any more is left out: its copy expires.
func (s *Store) DrainOwn(dst []Own) []Own {
	s.gen++
	for name := range s.mirror {
		delete(s.mirror, name)
		if o, ok := s.OwnOf([]byte(name)); ok {
			dst = append(dst, o)
		}
	}
	return dst
}

// OwnOf returns key name's own units in the key store's form, or false if
// it has none.
func (s *Store) OwnOf(name []byte) (Own, bool) {
	k := s.keys[string(name)]
	if k == nil || len(k.own) == 0 {
		return Own{}, false
	}
	o := Own{Key: k.name, Params: window.Params{Kind: k.lim.Kind, Limit: k.lim.Limit, Period: k.lim.Window}}
	last := k.own[len(k.own)-1]
	if k.lim.Kind == window.KindFixed {
		at := k.stamp
		if at < k.lim.start(last.id) || at >= k.lim.start(last.id+1) {
			at = k.lim.start(last.id)
		}
		o.State = window.State{uint64(at), uint64(last.n)}
		return o, true
	}
	sec := k.lim.width() / int64(time.Second)
	for _, b := range k.own[k.own.from(k.lim.firstOf(last.id)):] {
		if c, ok := window.KindSlide.Counter(b.id*sec, b.n); ok {
			o.Counters = append(o.Counters, c)
		}
	}
	return o, len(o.Counters) > 0
}

// Restore takes back own units from the key store after a restart (a
// snapshot or the log): a FIXED or SLIDE key's state, as OwnOf gave it.
// They count as acknowledged by no one, so they are sent again; what the
// other regions echo may raise them (a crash loses what was not yet
// saved). It reports whether o was a global limit's state.
func (s *Store) Restore(o Own) bool {
	lim := Limit{Kind: o.Params.Kind, Limit: o.Params.Limit, Window: o.Params.Period}
	if lim.Validate() != nil || o.Params.Rate != 0 {
		return false
	}
	k := s.keys[o.Key]
	if k != nil && !k.lim.sameBuckets(lim) {
		return false
	}
	if k == nil {
		k = s.lookup([]byte(o.Key), lim, true)
	}
	if lim.Kind == window.KindFixed {
		at, n := int64(o.State[0]), int64(o.State[1])
		k.own.raise(at/lim.width(), n)
		k.stamp = max(k.stamp, at)
	} else {
		sec := lim.width() / int64(time.Second)
		for _, c := range o.Counters {
			at, n := window.KindSlide.SplitCounter(c)
			k.own.raise(at/sec, n)
			k.stamp = max(k.stamp, at*int64(time.Second))
		}
	}
	s.resize(k)
	s.owned(k)
	s.changed(k.name)
	return true
}

// Forget drops key name's own units, as DEL drops a local key's state:
// this region may admit them again, so a window in which a key was
// deleted holds up to that many units more than the bound. What the other
// regions admitted still counts. A key left with nothing is removed.
func (s *Store) Forget(name []byte) {
	k := s.keys[string(name)]
	if k == nil {
		return
	}
	k.own, k.marked = k.own[:0], 0
	for p := range k.acked {
		k.acked[p], k.sent[p] = k.acked[p][:0], k.sent[p][:0]
		delete(s.peers[p].unacked, k.name)
	}
	delete(s.dirty, k.name)
	delete(s.mirror, k.name)
	if k.seenLast() < 0 {
		s.remove(k.name, k)
	}
}

// Drop removes key name as if it had never been decided: for a key whose
// first decision the key store refused (--max-keys, --maxmemory). Its
// units leave the admitted count.
func (s *Store) Drop(name []byte) {
	k := s.keys[string(name)]
	if k == nil {
		return
	}
	s.stats.Admitted -= k.own.sum(0, k.own.last(0))
	s.Forget(name)
}

// ForgetAll forgets every key's own units (FLUSHALL).
func (s *Store) ForgetAll() {
	for name := range s.keys {
		s.Forget([]byte(name))
	}
}
