package shard

import (
	"errors"
	"unsafe"

	"github.com/rlstore/rlstore/window"
)

// ErrEntry is returned by Import for an Entry whose state no Decide could have
// produced, such as unsorted or empty Slide counters.
var ErrEntry = errors.New("shard: inconsistent entry")

// MaxEntryCounters is the most Slide counters an Entry may carry: the largest
// counter block (one word a header) less room for one more counter.
const MaxEntryCounters = 4<<(extClasses-1) - 2

// Entry is one key's state, copied out of a Map by ExportShard or DrainDirty and
// put back by Import. An Entry whose Params.Kind is window.KindNone is a
// tombstone: the key was deleted. Times in State and Counters are absolute
// (unix nanoseconds and unix seconds), so an Entry can be stored and reloaded later.
type Entry struct {
	Key      []byte
	Params   window.Params
	State    window.State // Token, Fixed, Leaky: the algorithm's state; zero for Slide and Log
	Counters []uint64     // Slide: its counters; Log: its entries; oldest first; nil otherwise
	Route    []byte       // the key whose hash picks the shard, if not Key (see DecideAll); Import only
	// Kept and Digest make a Slide or Log entry a delta, which only the
	// state its key already holds can complete: the first Kept of its
	// Counters are that state's (a primary does not ship them to its
	// backup, and a backup's decoder leaves room for them), and Digest is
	// CounterDigest of all of them. See Map.ImportBatch. Zero: a whole entry.
	Kept   uint32
	Digest uint32
}

// Deleted reports whether e is a tombstone.
func (e *Entry) Deleted() bool { return e.Params.Kind == window.KindNone }

// Expiry returns the unix time in nanoseconds at which e's state stops
// restricting anything, as Sweep computes it.
func (e *Entry) Expiry() int64 { return e.Params.Expiry(e.State, e.Counters) }

// Shards returns the number of shards, so callers can walk them with ExportShard.
func (m *Map) Shards() int { return len(m.shards) }

// ExportShard appends copies of shard i's live entries to dst. It holds only
// shard i's lock, so a snapshot taken shard by shard never stops the world.
// The entries' keys and counters share a few fresh buffers per call.
func (m *Map) ExportShard(i int, dst []Entry) []Entry {
	return m.ExportShardTo(i, dst, nil)
}

// ExportShardTo is ExportShard with the entries' keys and counters in buf,
// whose memory the next call given buf reuses: a snapshot of 1M keys that
// took fresh buffers per shard left 26 MB of garbage. A nil buf is ExportShard.
func (m *Map) ExportShardTo(i int, dst []Entry, buf *ExportBuffer) []Entry {
	s := m.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	x := buf.exporter()
	if cap(x.keys) < s.keys.live {
		x.keys = make([]byte, 0, s.keys.live)
	}
	dst = x.allLocked(s, dst)
	buf.keep(&x)
	return dst
}

// ExportBuffer holds the memory that the keys and counters of exported
// entries point into, for reuse by the next export or drain given it: the
// entries one call returns stay valid only until then. Reuse keeps a
// busy log's drains from making garbage (143 MB of it while 1M keys were
// filled, one fresh buffer per shard per drain). The zero ExportBuffer is
// ready to use; it is not safe for concurrent use.
type ExportBuffer struct {
	keys     []byte
	counters []uint64
}

// maxKeptBuffer bounds the bytes of keys an ExportBuffer keeps between
// calls: a burst's buffer (a shard with millions of keys) is let go.
const maxKeptBuffer = 256 << 10

// exporter returns an exporter that fills b's memory; a nil b gives fresh.
func (b *ExportBuffer) exporter() exporter {
	if b == nil {
		return exporter{}
	}
	return exporter{keys: b.keys[:0], counters: b.counters[:0]}
}

// keep takes back x's buffers for the next call, unless they grew too large.
func (b *ExportBuffer) keep(x *exporter) {
	if b == nil {
		return
	}
	b.keys, b.counters = nil, nil
	if cap(x.keys) <= maxKeptBuffer {
		b.keys = x.keys
	}
	if cap(x.counters)*8 <= maxKeptBuffer {
		b.counters = x.counters
	}
}

// ExportShardFunc is ExportShard for only the live entries whose key keep
// accepts, such as the keys of the cluster slots moving to another node.
// keep sees the stored key (an internal policy key too: policy.Route gives
// the user key it belongs to), runs under shard i's lock, and must not
// keep the slice or call into m.
func (m *Map) ExportShardFunc(i int, keep func(key []byte) bool, dst []Entry) []Entry {
	s := m.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	x := exporter{keep: keep}
	return x.allLocked(s, dst)
}

// exporter copies entries out of a shard, packing keys and counters into
// shared buffers so an export allocates a few times per shard, not per key.
type exporter struct {
	keys     []byte
	counters []uint64
	keep     func(key []byte) bool // nil: every live entry
}

// allLocked appends every live entry of s to dst.
func (x *exporter) allLocked(s *shard, dst []Entry) []Entry {
	for j := uint32(0); j < s.slots.next; j++ {
		dst = x.slotLocked(s, j, dst)
	}
	return dst
}

// slotsLocked appends the entries of the slots js of s to dst, asking for
// each one's lines a few slots ahead: changed slots are spread over the
// shard's memory, and with many keys each export would otherwise wait for
// its slot, then its key bytes and counter block, one miss after another.
func (x *exporter) slotsLocked(s *shard, js []uint32, dst []Entry) []Entry {
	for k, j := range js {
		if k+2*exportAhead < len(js) {
			if a := js[k+2*exportAhead]; a < s.slots.next {
				sl := uintptr(unsafe.Pointer(s.slots.at(a)))
				prefetch(sl)
				prefetch(sl + slotBytes - 1)
			}
		}
		if k+exportAhead < len(js) {
			s.prefetchStateLocked(js[k+exportAhead])
		}
		dst = x.slotLocked(s, j, dst)
	}
	return dst
}

// exportAhead is how many slots ahead slotsLocked asks for key bytes and
// counters; slots it asks for twice as far ahead.
const exportAhead = 4

// slotLocked appends the entry in slot j of s to dst, if the slot is live.
func (x *exporter) slotLocked(s *shard, j uint32, dst []Entry) []Entry {
	if j >= s.slots.next {
		return dst
	}
	sl := s.slots.at(j)
	if sl.key == 0 || sl.param() == 0 {
		return dst
	}
	if x.keep != nil && !x.keep(s.keys.get(sl.key, sl.keyLen())) {
		return dst
	}
	e := Entry{Key: x.key(s.keys.get(sl.key, sl.keyLen())), Params: s.params.get(sl.param())}
	if hasCounters(e.Params.Kind) {
		b := s.peekCountersLocked(sl)
		n := len(x.counters)
		x.counters = append(x.counters, b...)
		e.Counters = x.counters[n:len(x.counters):len(x.counters)]
	} else {
		e.State = sl.state
	}
	return append(dst, e)
}

// key copies k into x's key buffer. The buffer may be reallocated later; the
// slice returned keeps pointing at the bytes it was given.
func (x *exporter) key(k []byte) []byte {
	n := len(x.keys)
	x.keys = append(x.keys, k...)
	return x.keys[n:len(x.keys):len(x.keys)]
}

// Import stores e as its key's state, replacing any state the key had, the way
// a snapshot or log replay restores it. A tombstone, or an entry that has
// expired at now (unix nanoseconds), deletes the key instead. A new key goes
// through the same limits as Decide and gets ErrFull beyond them; an entry no
// Decide could have produced gets ErrEntry or the parameters' error.
func (m *Map) Import(e Entry, now int64) error {
	_, err := m.ImportBatch([]Entry{e}, now)
	return err
}

// ImportBatch imports each of es in order, as Import does, and returns how
// many it imported before the first it refused, with the refusal. A delta
// (Entry.Kept) is completed from its key's state first, which it then
// replaces; one that state cannot complete is refused with ErrDelta, and
// the key keeps its state. A run of
// entries bound for one shard, as a transfer of drained or exported
// entries comes, takes the shard's lock once for up to prefetchWidth of
// them, whose lookups it first readies side by side as Prefetch does (a
// backup imports about as many keys as its primaries decide, each a few
// cache misses); entries with the parameters of the one before are not
// checked again.
func (m *Map) ImportBatch(es []Entry, now int64) (int, error) {
	var valid window.Params // the parameters the last entry checked had
	done := 0
	for done < len(es) {
		n, err := m.importRun(es[done:], now, &valid)
		done += n
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// importRun imports the first entries of es that share a shard, up to
// prefetchWidth, under one lock of it, and returns how many it imported.
func (m *Map) importRun(es []Entry, now int64, valid *window.Params) (int, error) {
	var hs [prefetchWidth]uint64
	var s *shard
	n := 0
	for ; n < len(es) && n < prefetchWidth; n++ {
		h, sn := m.locate(es[n].Key, es[n].Route)
		if s != nil && sn != s {
			break
		}
		hs[n], s = h, sn
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.keys.Load() >= m.prefetchFrom {
		s.prefetchRunLocked(hs[:n])
	}
	for i := range es[:n] {
		slot, found := uint32(0), false
		if es[i].Kept > 0 {
			var err error
			if slot, err = s.completeLocked(&es[i], hs[i]); err != nil {
				return i, err
			}
			found = true
		}
		if err := es[i].checkAgainst(valid); err != nil {
			return i, err
		}
		if err := m.importLocked(s, &es[i], hs[i], now, slot, found); err != nil {
			return i, err
		}
	}
	return n, nil
}

// prefetchRunLocked asks for the lines the lookups of hs will read, in
// Prefetch's three passes, all in s, whose lock is held.
func (s *shard) prefetchRunLocked(hs []uint64) {
	var slot [prefetchWidth]uint32
	for _, h := range hs {
		s.index.prefetchLocked(h)
	}
	for i, h := range hs {
		slot[i] = s.prefetchSlotLocked(h)
	}
	for i := range hs {
		if slot[i] != 0 {
			s.prefetchStateLocked(slot[i] - 1)
		}
	}
}

// checkAgainst is check, skipping the parameters' checks when they equal
// valid's, and setting valid to e's parameters once they pass.
func (e *Entry) checkAgainst(valid *window.Params) error {
	if e.Kept > 0 {
		return ErrEntry // not completed
	}
	if e.Deleted() {
		return nil
	}
	if e.Params != *valid || valid.Kind == window.KindNone {
		if err := check(e.Params, 1); err != nil {
			return err
		}
		*valid = e.Params
	}
	if len(e.Counters) > MaxEntryCounters || e.Params.CheckState(e.State, e.Counters) != nil {
		return ErrEntry
	}
	return nil
}

// check reports whether e could have come out of a Map.
func (e *Entry) check() error {
	var none window.Params
	return e.checkAgainst(&none)
}

// importLocked stores e, checked already, in s, whose lock is held. When
// found is set, e's key is in slot i already.
func (m *Map) importLocked(s *shard, e *Entry, h uint64, now int64, i uint32, found bool) error {
	if e.Deleted() || e.Expiry() <= now {
		m.deleteLocked(s, e.Key, h)
		return nil
	}
	ok := found
	if !ok {
		i, ok = s.findLocked(e.Key, h)
	}
	if !ok {
		if i, ok = m.insertLocked(s, e.Key, h); !ok {
			return ErrFull
		}
	}
	s.setEntryLocked(s.slots.at(i), e)
	s.markDirtyLocked(i)
	m.accountLocked(s)
	return nil
}

// setEntryLocked replaces sl's parameters and state with e's. Slide counters
// go inline when they fit and to a counter block otherwise, as Decide keeps them.
func (s *shard) setEntryLocked(sl *slot, e *Entry) {
	if sl.param() != 0 && s.params.get(sl.param()) == e.Params {
		s.setStateLocked(sl, e)
		return
	}
	s.unbindLocked(sl)
	s.bindLocked(sl, e.Params)
	sl.state = e.State
	if !hasCounters(e.Params.Kind) {
		return
	}
	sl.state = window.State{}
	if len(e.Counters) <= inlineCounters {
		copy(sl.state[:], e.Counters)
		return
	}
	s.moveCountersLocked(sl, e.Counters, len(e.Counters)+1)
}

// setStateLocked replaces the state of sl, which has e's parameters, with
// e's, as a backup's import of a key it holds a copy of does on nearly
// every shipment: the parameters stay bound, and counters that fit the
// key's counter block, without leaving it much too large, are copied into
// it rather than into a block freed and allocated again.
func (s *shard) setStateLocked(sl *slot, e *Entry) {
	if !hasCounters(e.Params.Kind) {
		sl.state = e.State
		return
	}
	if len(e.Counters) <= inlineCounters {
		s.freeCountersLocked(sl)
		sl.state = window.State{}
		copy(sl.state[:], e.Counters)
		return
	}
	if sl.state[0] == extMark {
		ref := uint32(sl.state[1])
		b := s.ext.counters(ref)
		if len(e.Counters) < cap(b) && classFor(len(e.Counters)+1) >= classFor(cap(b))-1 {
			s.ext.setLen(ref, copy(b[:cap(b)], e.Counters))
			return
		}
	}
	s.moveCountersLocked(sl, e.Counters, len(e.Counters)+1)
}
