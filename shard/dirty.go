package shard

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// dirty is one shard's record of the slots changed and keys deleted since the
// last DrainDirty, kept only once the Map tracks changes. It is guarded by the
// shard's mu and allocates only when a slot is first marked past the bitmap's
// end, or a key is deleted.
//
// The changed slots are also listed, so a drain after a few changes visits
// them without scanning the bitmap, but only up to one entry per 64 slots: a
// list of every change in a second of filling 1M keys held 2.5 MB. Past
// that, a drain scans the bitmap, which costs a word per 64 slots.
type dirty struct {
	on    bool     // the Map tracks changes
	bits  []uint64 // bit j set: slot j changed
	slots []uint32 // the slots whose bits are set, in order of first change, unless full
	full  bool     // more slots changed than slots may hold: a drain scans bits
	gone  []byte   // keys deleted, each uvarint-length-prefixed
	gen   uint16   // the shard's generation at the last drain
	at    int      // the word of bits a drain stopped at, to go on from
}

// dirtyListMin is how many changed slots a shard lists however small it is.
const dirtyListMin = 64

// TrackChanges makes every shard record its changes from now on, for
// DrainDirty. An append-only log calls it once, after loading the Map; a Map
// that never calls it records nothing and pays only a branch per write.
func (m *Map) TrackChanges() {
	for _, s := range m.shards {
		s.mu.Lock()
		if !s.dirty.on {
			s.dirty = dirty{on: true, gen: s.gen}
		}
		s.mu.Unlock()
	}
}

// markDirtyLocked records that slot i changed, for DrainDirty.
//
// EVERY path that changes a slot's state or parameters must call it, under
// s.mu, before unlocking: Decide, Import, and any new write path (CL.THROTTLE,
// a multi-rule decision, a refund). A change not marked here never reaches the
// append-only log and is lost by a crash. Deletes call markGoneLocked instead;
// peeks and denials that change nothing need not call it.
func (s *shard) markDirtyLocked(i uint32) {
	d := &s.dirty
	if !d.on {
		return
	}
	w, bit := int(i>>6), uint64(1)<<(i&63)
	if w >= len(d.bits) {
		d.bits = append(d.bits, make([]uint64, w+1-len(d.bits))...)
	}
	if d.bits[w]&bit != 0 {
		return
	}
	d.bits[w] |= bit
	switch {
	case d.full:
	case len(d.slots) < max(dirtyListMin, len(d.bits)):
		d.slots = append(d.slots, i)
	default:
		d.full = true
	}
}

// markGoneLocked records a tombstone for key, which is being deleted. Call it
// from every path that removes a live key, except Sweep: swept state had
// expired, so a reload drops it anyway.
func (s *shard) markGoneLocked(key []byte) {
	d := &s.dirty
	if d.on {
		d.gone = binary.AppendUvarint(d.gone, uint64(len(key)))
		d.gone = append(d.gone, key...)
	}
}

// DrainDirty appends to dst the keys of shard i that changed since the last
// drain: first a tombstone for each key deleted, then the current state of
// each key changed (in order of first change, or of slot after many changes),
// so that applying them in order yields the shard's state.
// A key deleted and made again shows as both. After a shard rebuild or reset,
// which moves keys to new slots, every live key of the shard counts as
// changed. It returns dst unchanged unless TrackChanges was called.
//
// Flush records no tombstones: whoever logs changes must log a Flush itself,
// in order with the drains (persistence.Store.Flush does).
func (m *Map) DrainDirty(i int, dst []Entry) []Entry {
	return m.DrainDirtyTo(i, dst, nil)
}

// DrainDirtyTo is DrainDirty with the entries' keys and counters in buf,
// whose memory the next call given buf reuses. A nil buf is DrainDirty.
func (m *Map) DrainDirtyTo(i int, dst []Entry, buf *ExportBuffer) []Entry {
	dst, _ = m.DrainDirtyUpTo(i, dst, buf, math.MaxInt)
	return dst
}

// DrainDirtyUpTo is DrainDirtyTo that stops after visiting max changed
// slots, and reports whether it left changes for the next call. Tombstones
// and a moved shard's keys still come all at once. Draining a busy shard in
// pieces bounds the entries its caller holds, so they need not be allocated
// again every drain: one shard's second of a 1M-key fill was 1,300 entries
// of 120 bytes. The changes made between two pieces come in a later piece
// or the next drain, after any tombstone drained before them.
func (m *Map) DrainDirtyUpTo(i int, dst []Entry, buf *ExportBuffer, max int) (es []Entry, more bool) {
	s := m.shards[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	x := buf.exporter()
	defer buf.keep(&x)
	return s.drainLocked(&x, dst, max)
}

// drainLocked appends the entries DrainDirtyUpTo returns, copied by x.
func (s *shard) drainLocked(x *exporter, dst []Entry, max int) ([]Entry, bool) {
	d := &s.dirty
	for b := d.gone; len(b) > 0; {
		n, k := binary.Uvarint(b)
		dst = append(dst, Entry{Key: x.key(b[k : k+int(n)])})
		b = b[k+int(n):]
	}
	d.gone = d.gone[:0]
	if s.gen != d.gen { // slots moved
		d.gen, d.at = s.gen, 0
		d.slots, d.full = d.slots[:0], false
		clear(d.bits)
		if !d.on {
			return dst, false
		}
		return x.allLocked(s, dst), false
	}
	if d.full {
		return d.scanLocked(s, x, dst, max)
	}
	n := min(len(d.slots), max)
	for _, j := range d.slots[:n] {
		d.bits[j>>6] &^= 1 << (j & 63)
	}
	dst = x.slotsLocked(s, d.slots[:n], dst)
	d.slots = d.slots[:copy(d.slots, d.slots[n:])]
	return dst, len(d.slots) > 0
}

// scanLocked appends the entry of every slot whose bit is set, clearing the
// bits, from the word the last scan stopped at, until it has visited max.
// While a scan is unfinished every change only sets its bit, so the list
// stays empty; one that went on from an earlier piece has passed over
// changes made meanwhile in words before it, so the next drain scans again.
func (d *dirty) scanLocked(s *shard, x *exporter, dst []Entry, max int) ([]Entry, bool) {
	resumed := d.at > 0
	d.slots = d.slots[:0]
	var run [drainRun]uint32 // slots found and not yet exported
	k := 0
	for w := d.at; w < len(d.bits); w++ {
		for word := d.bits[w]; word != 0; word &= word - 1 {
			if max == 0 {
				d.bits[w], d.at = word, w
				return x.slotsLocked(s, run[:k], dst), true
			}
			max--
			run[k], k = uint32(w<<6+bits.TrailingZeros64(word)), k+1
			if k == drainRun {
				dst, k = x.slotsLocked(s, run[:k], dst), 0
			}
		}
		d.bits[w] = 0
	}
	d.at, d.full = 0, resumed
	return x.slotsLocked(s, run[:k], dst), false
}

// drainRun is how many changed slots a scan finds before exporting them.
const drainRun = 64
