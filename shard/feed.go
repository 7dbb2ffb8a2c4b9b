package shard

import (
	"encoding/binary"

	"github.com/rlstore/rlstore/window"
)

// Feed records which keys of a Map change, so that an append-only log can
// write each changed key's state once per flush instead of once per decision.
//
// Changes made through the Feed's methods are recorded, under the same shard
// lock that makes them; changes made through the Map's own methods are not.
// Keys freed by Sweep are not recorded either: their state had expired, so a
// reload drops them anyway. DrainDirty hands the recorded changes out, shard by
// shard. A Map has at most one Feed. Make it with NewFeed; it is safe for
// concurrent use.
type Feed struct {
	m      *Map
	shards []*feedShard // parallel to m.shards; each guarded by that shard's mu
}

// feedShard is one shard's record of changes since the last drain.
type feedShard struct {
	bits  []uint64 // bit j set: slot j changed
	slots []uint32 // the slots whose bits are set, in order of first change
	gone  []byte   // keys deleted, each uvarint-length-prefixed
	gen   uint16   // the shard's generation at the last drain
}

// NewFeed returns a Feed with no changes recorded.
func (m *Map) NewFeed() *Feed {
	f := &Feed{m: m, shards: make([]*feedShard, len(m.shards))}
	for i, s := range m.shards {
		s.mu.Lock()
		f.shards[i] = &feedShard{gen: s.gen}
		s.mu.Unlock()
	}
	return f
}

// markLocked records that slot i changed.
func (fs *feedShard) markLocked(i uint32) {
	w, bit := int(i>>6), uint64(1)<<(i&63)
	if w >= len(fs.bits) {
		fs.bits = append(fs.bits, make([]uint64, w+1-len(fs.bits))...)
	}
	if fs.bits[w]&bit == 0 {
		fs.bits[w] |= bit
		fs.slots = append(fs.slots, i)
	}
}

// Decide is Map.Decide, recording the change unless peek is set.
func (f *Feed) Decide(key []byte, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	if peek {
		return f.m.Decide(key, p, now, cost, true)
	}
	if err := check(p, cost); err != nil {
		return window.Decision{}, err
	}
	m := f.m
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	d, err := m.decideLocked(s, key, h, p, max(now, 0), cost, false)
	if err == nil {
		if i, ok := s.findLocked(key, h); ok {
			f.shards[h&m.mask].markLocked(i)
		}
	}
	s.mu.Unlock()
	s.stats.count(d, err)
	return d, err
}

// Delete is Map.Delete, recording a tombstone for key.
func (f *Feed) Delete(key []byte) bool {
	m := f.m
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(key, h)
	if ok {
		fs := f.shards[h&m.mask]
		fs.gone = binary.AppendUvarint(fs.gone, uint64(len(key)))
		fs.gone = append(fs.gone, key...)
		s.removeLocked(i, h)
		m.keys.Add(-1)
		m.accountLocked(s)
	}
	return ok
}

// Touch records that key may have changed through a Map method the Feed does
// not wrap: the next drain returns its state then, or a tombstone if it no
// longer exists. Call it after the change.
func (f *Feed) Touch(key []byte) {
	m := f.m
	h := m.hash(key)
	s := m.shardFor(h)
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := f.shards[h&m.mask]
	if i, ok := s.findLocked(key, h); ok {
		fs.markLocked(i)
		return
	}
	fs.gone = binary.AppendUvarint(fs.gone, uint64(len(key)))
	fs.gone = append(fs.gone, key...)
}

// Import is Map.Import, recording the change.
func (f *Feed) Import(e Entry, now int64) error {
	_, err := f.m.importEntry(e, now, f)
	return err
}

// DrainDirty appends to dst the keys of shard i that changed since the last
// drain: first a tombstone for each key deleted, then the current state of each
// key changed, so that applying them in order yields the shard's state. A key
// deleted and made again shows as both. After a shard rebuild or reset, which
// moves keys to new slots, every live key of the shard counts as changed.
func (f *Feed) DrainDirty(i int, dst []Entry) []Entry {
	s, fs := f.m.shards[i], f.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	var x exporter
	for b := fs.gone; len(b) > 0; {
		n, k := binary.Uvarint(b)
		dst = append(dst, Entry{Key: x.key(b[k : k+int(n)])})
		b = b[k+int(n):]
	}
	fs.gone = fs.gone[:0]
	if s.gen != fs.gen { // slots moved
		fs.gen = s.gen
		clear(fs.bits)
		fs.slots = fs.slots[:0]
		return x.allLocked(s, dst)
	}
	for _, j := range fs.slots {
		fs.bits[j>>6] &^= 1 << (j & 63)
		dst = x.slotLocked(s, j, dst)
	}
	fs.slots = fs.slots[:0]
	return dst
}
