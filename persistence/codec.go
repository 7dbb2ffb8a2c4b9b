package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// An entries block's payload, after its kind byte:
//
//	base      varint: unix nanoseconds the block's times are relative to
//	nparams   uvarint, then each: kind byte, limit, rate, period (uvarints; period in ns);
//	          the kind byte's top bit (paramFirstHit) is Params.FirstHit
//	nentries  uvarint, then each entry:
//	  key       uvarint length, bytes
//	  param     uvarint: 0 for a tombstone, else 1 + an index into the params
//	  Token, Fixed, Leaky: state[0]-base, state[1]-base as varints (wrapping;
//	            both are absolute unix ns, except Fixed's state[1], a count)
//	  Slide:    uvarint counter count; the first counter's second - base second as a
//	            varint, then each later one's as a uvarint gap (>= 1); each followed
//	            by its count (uvarint, >= 1)
//	  Log:      uvarint entry count; the first entry's millisecond - base millisecond
//	            as a varint, then each later one's as a uvarint gap (>= 1); each
//	            followed by its count (uvarint, >= 1)
//
// A delta block (kindDelta, shipped to a backup, never stored) is the same
// but for Slide and Log entries, which start with a uvarint kept: 0 for a
// whole entry, else the entry is a delta (shard.Entry.Kept), and 4 bytes of
// its digest (little endian) follow; the counters then written are those
// after the first kept.
//
// Times are absolute: base is written in the block, so nothing depends on when
// the file is read. Deltas only make the common case small.

// paramFirstHit is the bit of a parameter's kind byte that says FirstHit (a
// Fixed window started by its first admission). Kinds stay below it; a
// reader that does not know the bit reads an unknown kind and refuses the
// entry rather than misread it as an aligned window.
const paramFirstHit = 0x80

// paramKindByte returns p's kind byte.
func paramKindByte(p window.Params) byte {
	if p.FirstHit {
		return byte(p.Kind) | paramFirstHit
	}
	return byte(p.Kind)
}

// blockBytes is the size past which an entries block is cut, so a torn tail
// costs little and a reader's buffer stays small.
const blockBytes = 1 << 20

// appendEntries appends es to buf as one or more entries blocks.
func appendEntries(buf []byte, es []shard.Entry, base int64) []byte {
	return appendBlocks(buf, es, base, kindEntries)
}

// appendBlocks appends es to buf as one or more blocks of kind, kindEntries
// or kindDelta.
func appendBlocks(buf []byte, es []shard.Entry, base int64, kind byte) []byte {
	var pt paramTable
	for len(es) > 0 {
		n, size := 0, 0
		for n < len(es) && (n == 0 || size < blockBytes) {
			size += len(es[n].Key) + 10*len(es[n].Counters) + 24
			n++
		}
		buf = appendEntryBlock(buf, es[:n], base, &pt, kind)
		es = es[n:]
	}
	return buf
}

func appendEntryBlock(buf []byte, es []shard.Entry, base int64, pt *paramTable, kind byte) []byte {
	pt.reset()
	for i := range es {
		if !es[i].Deleted() {
			pt.id(es[i].Params)
		}
	}
	buf, start := beginBlock(buf, kind)
	buf = binary.AppendVarint(buf, base)
	buf = binary.AppendUvarint(buf, uint64(len(pt.list())))
	for _, p := range pt.list() {
		buf = append(buf, paramKindByte(p))
		buf = binary.AppendUvarint(buf, uint64(p.Limit))
		buf = binary.AppendUvarint(buf, uint64(p.Rate))
		buf = binary.AppendUvarint(buf, uint64(p.Period))
	}
	buf = binary.AppendUvarint(buf, uint64(len(es)))
	for i := range es {
		buf = appendEntry(buf, &es[i], base, pt, kind == kindDelta)
	}
	return endBlock(buf, start)
}

// appendEntry appends e; in a delta block, a delta if e is one, and in an
// entries block whole whatever its Kept.
func appendEntry(buf []byte, e *shard.Entry, base int64, pt *paramTable, delta bool) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(e.Key)))
	buf = append(buf, e.Key...)
	if e.Deleted() {
		return append(buf, 0)
	}
	buf = binary.AppendUvarint(buf, uint64(pt.id(e.Params))+1)
	if k := e.Params.Kind; k.Counters() {
		if !delta {
			return appendCounters(buf, k, e.Counters, base)
		}
		buf = binary.AppendUvarint(buf, uint64(e.Kept))
		if e.Kept == 0 {
			return appendCounters(buf, k, e.Counters, base)
		}
		buf = binary.LittleEndian.AppendUint32(buf, e.Digest)
		return appendCounters(buf, k, e.Counters[e.Kept:], base)
	}
	buf = binary.AppendVarint(buf, int64(e.State[0]-uint64(base)))
	return binary.AppendVarint(buf, int64(e.State[1]-uint64(base)))
}

// appendCounters appends the counters of a kind that keeps them (Slide's
// per-second counters, Log's per-millisecond entries): their number, then
// each stamp as a delta (the first from base, in the kind's unit) and count.
// The room for them is made once, and a gap or count under 0x80, as nearly
// every one is, is written as its one byte.
func appendCounters(buf []byte, k window.Kind, b []uint64, base int64) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(b)))
	if !k.Stamped() {
		return appendPairs(buf, b)
	}
	if len(b) == 0 {
		return buf
	}
	at, n := k.SplitCounter(b[0])
	buf = binary.AppendVarint(buf, at-base/int64(k.Unit()))
	buf = appendUvarint(buf, uint64(n))
	if len(b) > 1 {
		buf = slices.Grow(buf, 2*(len(b)-1))
	}
	prev := at
	for _, c := range b[1:] {
		at, n := k.SplitCounter(c)
		buf = appendUvarint(buf, uint64(at-prev))
		buf = appendUvarint(buf, uint64(n))
		prev = at
	}
	return buf
}

// appendUvarint is binary.AppendUvarint with a fast path for one byte.
func appendUvarint(buf []byte, v uint64) []byte {
	if v < 0x80 {
		return append(buf, byte(v))
	}
	return binary.AppendUvarint(buf, v)
}

// paramTable numbers the distinct parameters of one block. A block rarely
// holds more than a few, so they live in an array, found by a scan, and
// appendEntries allocates nothing for them: a map and a list per call were
// 1.1 MB of garbage while 1M keys were filled with a data dir. A map takes
// over past len(few).
type paramTable struct {
	few  [8]window.Params
	n    int             // parameters in few, while more is empty
	more []window.Params // every parameter, once there are more than len(few)
	ids  map[window.Params]int
	last int // index of the parameters looked up last: most entries share them
}

func (pt *paramTable) reset() {
	pt.n, pt.last = 0, 0
	pt.more = pt.more[:0]
	clear(pt.ids)
}

// list returns the parameters in the order of their ids.
func (pt *paramTable) list() []window.Params {
	if len(pt.more) > 0 {
		return pt.more
	}
	return pt.few[:pt.n]
}

func (pt *paramTable) id(p window.Params) int {
	if l := pt.list(); pt.last < len(l) && l[pt.last] == p {
		return pt.last
	}
	if len(pt.more) == 0 {
		if i := slices.Index(pt.few[:pt.n], p); i >= 0 {
			pt.last = i
			return i
		}
		if pt.n < len(pt.few) {
			pt.few[pt.n] = p
			pt.n++
			pt.last = pt.n - 1
			return pt.last
		}
		pt.more = append(pt.more, pt.few[:]...)
		if pt.ids == nil {
			pt.ids = make(map[window.Params]int)
		}
		for i, q := range pt.few {
			pt.ids[q] = i
		}
	}
	id, ok := pt.ids[p]
	if !ok {
		id = len(pt.more)
		pt.ids[p] = id
		pt.more = append(pt.more, p)
	}
	pt.last = id
	return id
}

// decoder reads the fields of a payload. A read past the end, or a varint
// that does not fit, sets bad and returns zero values.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.bad = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad, d.b = true, nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int returns a uvarint that must fit an int64.
func (d *decoder) int() int64 {
	v := d.uvarint()
	if v > math.MaxInt64 {
		d.bad = true
		return 0
	}
	return int64(v)
}

func (d *decoder) bytes(n int) []byte {
	if n < 0 || len(d.b) < n {
		d.bad, d.b = true, nil
		return nil
	}
	b := d.b[:n:n]
	d.b = d.b[n:]
	return b
}

// entryBlock decodes an entries block one entry at a time.
type entryBlock struct {
	d        decoder
	size     int // bytes in the payload, to turn positions into offsets
	base     int64
	params   []window.Params
	left     uint64 // entries not yet read
	counters []uint64
	delta    bool // a kindDelta block: Slide and Log entries may be deltas
}

// parse reads the block's preamble. It returns a reason for rejecting the block, or "".
func (eb *entryBlock) parse(payload []byte) string {
	eb.d, eb.size, eb.delta = decoder{b: payload[1:]}, len(payload), payload[0] == kindDelta
	eb.base = eb.d.varint()
	np := eb.d.uvarint()
	if np > uint64(len(eb.d.b)) {
		return "parameter count out of range"
	}
	eb.params = eb.params[:0]
	for range np {
		kb := eb.d.byte()
		p := window.Params{Kind: window.Kind(kb &^ paramFirstHit), FirstHit: kb&paramFirstHit != 0,
			Limit: eb.d.int(), Rate: eb.d.int(), Period: time.Duration(eb.d.int())}
		eb.params = append(eb.params, p)
	}
	eb.left = eb.d.uvarint()
	if eb.d.bad || eb.left > uint64(len(eb.d.b)) {
		return "malformed entries block"
	}
	return ""
}

// pos returns the payload position of the next byte to read.
func (eb *entryBlock) pos() int { return eb.size - len(eb.d.b) }

// next reads the next entry into e. Its key points into the block, and its
// counters are appended to eb.counters, so they stay valid until the caller
// resets eb.counters. It returns a reason for rejecting the entry, or "".
func (eb *entryBlock) next(e *shard.Entry) string {
	eb.left--
	*e = shard.Entry{Key: eb.d.bytes(int(min(eb.d.uvarint(), math.MaxInt32)))}
	id := eb.d.uvarint()
	switch {
	case eb.d.bad:
		return "malformed entry"
	case id == 0:
		return ""
	case id > uint64(len(eb.params)):
		return "entry names no parameters"
	}
	e.Params = eb.params[id-1]
	if e.Params.Kind.Counters() {
		if reason := eb.counterList(e); reason != "" {
			return reason
		}
	} else {
		e.State = window.State{uint64(eb.d.varint()) + uint64(eb.base), uint64(eb.d.varint()) + uint64(eb.base)}
	}
	if eb.d.bad {
		return "malformed entry"
	}
	return ""
}

// counterList reads the counters of an entry whose kind keeps them. Whether
// they could be that kind's state is Import's to check. It reads the bytes
// itself rather than through the decoder, with a one-byte fast path: a
// counter's gap and count nearly always fit a byte each, and a backup
// decodes every counter of every key its primaries change.
func (eb *entryBlock) counterList(e *shard.Entry) string {
	k := e.Params.Kind
	kept := uint64(0)
	if eb.delta {
		if kept = eb.d.uvarint(); kept > maxDeltaKept {
			return "delta keeps too many counters"
		}
		if kept > 0 {
			digest := eb.d.bytes(4)
			if digest == nil {
				return "malformed entry"
			}
			e.Kept, e.Digest = uint32(kept), binary.LittleEndian.Uint32(digest)
		}
	}
	n := eb.d.uvarint()
	if n > uint64(len(eb.d.b))/2 || kept+n > shard.MaxEntryCounters || (kept > 0 && n == 0) {
		return "counter count out of range"
	}
	if !k.Stamped() {
		return eb.pairs(e, n)
	}
	start := len(eb.counters)
	eb.counters = slices.Grow(eb.counters, int(kept+n))[:start+int(kept+n)]
	clear(eb.counters[start : start+int(kept)]) // the delta's completion fills these in
	out := eb.counters[start+int(kept):]
	b, p := eb.d.b, 0
	at := eb.base / int64(k.Unit())
	for i := range out {
		var gap, count uint64
		if p+1 < len(b) && b[p]|b[p+1] < 0x80 {
			gap, count = uint64(b[p]), uint64(b[p+1])
			p += 2
		} else if gap, count, p = uvarintPair(b, p); p < 0 {
			eb.d.bad, eb.d.b = true, nil
			return "malformed entry"
		}
		if i == 0 {
			at += unzigzag(gap)
		} else {
			at += int64(min(gap, 1<<44))
		}
		c, ok := k.Counter(at, int64(min(count, math.MaxInt64)))
		if !ok {
			return "counter out of range"
		}
		out[i] = c
	}
	eb.d.b = b[p:]
	e.Counters = eb.counters[start:len(eb.counters):len(eb.counters)]
	return ""
}

// maxDeltaKept bounds the counters a delta leaves to the backup's copy, as
// its decoder makes room for them: a key with more ships whole.
const maxDeltaKept = 1 << 13

// uvarintPair reads the two uvarints at b[p:] and returns the position
// past them, or -1 if they are not there.
func uvarintPair(b []byte, p int) (x, y uint64, next int) {
	x, n := binary.Uvarint(b[p:])
	if n <= 0 {
		return 0, 0, -1
	}
	y, m := binary.Uvarint(b[p+n:])
	if m <= 0 {
		return 0, 0, -1
	}
	return x, y, p + n + m
}

// unzigzag is binary.Varint's mapping of a uvarint to a signed value.
func unzigzag(u uint64) int64 {
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// importBlock imports every entry of an entries block into m, dropping those
// expired at now. Tombstones are an error unless allowed.
func importBlock(br *blockReader, payload []byte, m *shard.Map, now int64, tombstones bool, eb *entryBlock) (int, error) {
	at := func(pos int) int64 { return br.last + frameHead + int64(pos) }
	if reason := eb.parse(payload); reason != "" {
		return 0, br.corrupt(br.last, reason)
	}
	var e shard.Entry
	n := 0
	for eb.left > 0 {
		pos := eb.pos()
		eb.counters = eb.counters[:0] // Import copies them
		if reason := eb.next(&e); reason != "" {
			return n, br.corrupt(at(pos), reason)
		}
		if e.Deleted() && !tombstones {
			return n, br.corrupt(at(pos), "tombstone in a snapshot")
		}
		e.Route = policy.Route(e.Key) // a policy's rule state shares its user key's shard
		if err := m.Import(e, now); err != nil {
			if errors.Is(err, shard.ErrFull) {
				return n, fmt.Errorf("persistence: loading %s: %w", br.name, err)
			}
			return n, br.corrupt(at(pos), "bad entry: "+err.Error())
		}
		n++
	}
	if len(eb.d.b) != 0 {
		return n, br.corrupt(at(eb.pos()), "trailing bytes after the last entry")
	}
	return n, nil
}

// appendPairs appends the words of a kind whose counters are not stamped
// (a Lease's pairs of an ordered word and an id): each first word as its
// gap from the one before (the first whole), each second word whole, 8
// bytes little-endian. Whether they could be the kind's state is Import's
// to check.
func appendPairs(buf []byte, b []uint64) []byte {
	prev := uint64(0)
	for i := 0; i+1 < len(b); i += 2 {
		buf = binary.AppendUvarint(buf, b[i]-prev)
		buf = binary.LittleEndian.AppendUint64(buf, b[i+1])
		prev = b[i]
	}
	return buf
}

// pairs reads the n words appendPairs wrote.
func (eb *entryBlock) pairs(e *shard.Entry, n uint64) string {
	if n%2 != 0 || n > 2*uint64(len(eb.d.b))/9 || e.Kept != 0 {
		return "counter count out of range"
	}
	start := len(eb.counters)
	eb.counters = slices.Grow(eb.counters, int(n))
	prev := uint64(0)
	for range n / 2 {
		prev += eb.d.uvarint()
		id := eb.d.bytes(8)
		if eb.d.bad || id == nil {
			return "malformed entry"
		}
		eb.counters = append(eb.counters, prev, binary.LittleEndian.Uint64(id))
	}
	e.Counters = eb.counters[start:len(eb.counters):len(eb.counters)]
	return ""
}
