package persistence

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
)

// A transfer is key states on their way to another node: a cluster slot's
// keys moving to a new owner, or a primary's changes shipped to its backup.
// It is the snapshot's and the log's entries blocks, each checksummed, with
// no file header, so one codec serves disk and network alike.

// AppendEntries appends es to buf as entries blocks, their times relative to
// now (unix nanoseconds) only to keep them small. Tombstones are kept.
func AppendEntries(buf []byte, es []shard.Entry, now int64) []byte {
	return appendEntries(buf, es, now)
}

// AppendEntriesChunks appends es to the last of chunks as entries blocks,
// starting a chunk with fresh() whenever the last holds about limit bytes, so
// that every chunk stays near limit (one entry larger than limit gets a chunk of
// its own). fresh may return a buffer with room reserved at its start, such
// as for a header the caller fills in later: limit counts it.
func AppendEntriesChunks(chunks [][]byte, es []shard.Entry, now int64, limit int, fresh func() []byte) [][]byte {
	return appendChunks(chunks, es, now, limit, fresh, kindEntries)
}

// AppendDeltaChunks is AppendEntriesChunks for a backup that takes deltas
// (see Cut): entries that are deltas are written as such, in delta blocks,
// which only a Decoder with Deltas set reads.
func AppendDeltaChunks(chunks [][]byte, es []shard.Entry, now int64, limit int, fresh func() []byte) [][]byte {
	return appendChunks(chunks, es, now, limit, fresh, kindDelta)
}

func appendChunks(chunks [][]byte, es []shard.Entry, now int64, limit int, fresh func() []byte, kind byte) [][]byte {
	delta := kind == kindDelta
	started := false
	for len(es) > 0 {
		if len(chunks) == 0 {
			chunks, started = append(chunks, fresh()), true
		}
		last := &chunks[len(chunks)-1]
		room := limit - len(*last) - blockOverhead
		n, size := 0, 0
		for n < len(es) && size+entryBound(&es[n], delta) <= room {
			size += entryBound(&es[n], delta)
			n++
		}
		if n == 0 && !started {
			chunks, started = append(chunks, fresh()), true
			continue
		}
		n = max(n, 1)
		*last = appendBlocks(*last, es[:n], now, kind)
		es, started = es[n:], false
	}
	return chunks
}

// blockOverhead bounds an entries block's bytes besides its entries: the
// frame, the base and the counts, and a few distinct parameters.
const blockOverhead = frameHead + frameTail + 1 + 3*binary.MaxVarintLen64 + 4*(1+3*binary.MaxVarintLen64)

// entryBound bounds the bytes appendEntry writes for e, in a delta block
// if delta.
func entryBound(e *shard.Entry, delta bool) int {
	n := len(e.Key) + 3*binary.MaxVarintLen64 + 2*binary.MaxVarintLen64*len(e.Counters)
	if delta {
		n += binary.MaxVarintLen64 + 4 - 2*binary.MaxVarintLen64*int(e.Kept)
	}
	return n
}

// DecodeEntries calls fn for each entry AppendEntries wrote into b, in
// order, tombstones included. The entry and its slices are valid only
// during the call. It stops at fn's first error, and returns the number of
// entries fn accepted and an error wrapping ErrCorrupt for damaged input.
func DecodeEntries(b []byte, fn func(*shard.Entry) error) (int, error) {
	n := 0
	_, err := DecodeBatches(b, func(es []shard.Entry) error {
		for i := range es {
			if err := fn(&es[i]); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

// DecodeBatches calls fn with the entries AppendEntries wrote into b, in
// order, tombstones included, up to transferBatch at a time. The entries
// and their slices are valid only during the call: keys point into b. An
// entry's Route is set when its shard is picked by another key than its
// own (an internal policy key lands in its user key's shard). It stops at
// fn's first error, and returns the number of entries handed to fn before
// it and an error wrapping ErrCorrupt for damaged input, found before any
// entry of the damaged block is handed over.
func DecodeBatches(b []byte, fn func([]shard.Entry) error) (int, error) {
	var d Decoder
	return d.Decode(b, fn)
}

// Decoder is DecodeBatches with memory kept from one call to the next: a
// backup decodes every shipment its primaries send. The zero Decoder is
// ready to use; it is not safe for concurrent use.
type Decoder struct {
	// Deltas makes the Decoder read delta blocks (AppendDeltaChunks) too:
	// their deltas are entries that only a Map's state can complete (see
	// shard.Entry.Kept). Only a backup's copies take them.
	Deltas bool

	eb entryBlock
	es []shard.Entry
}

// Decode is DecodeBatches, reusing d's memory.
func (d *Decoder) Decode(b []byte, fn func([]shard.Entry) error) (int, error) {
	defer d.release()
	eb := &d.eb
	n := 0
	for off := 0; off < len(b); {
		payload, size, reason := transferBlock(b[off:])
		switch {
		case reason != "":
			return n, transferCorrupt(off, reason)
		case payload[0] != kindEntries && (payload[0] != kindDelta || !d.Deltas):
			return n, transferCorrupt(off, "not an entries block")
		}
		if reason := eb.parse(payload); reason != "" {
			return n, transferCorrupt(off, reason)
		}
		for eb.left > 0 {
			var reason string
			if d.es, reason = eb.batch(d.es[:0]); reason != "" {
				return n, transferCorrupt(off, reason)
			}
			if err := fn(d.es); err != nil {
				return n, err
			}
			n += len(d.es)
		}
		if len(eb.d.b) != 0 {
			return n, transferCorrupt(off, "trailing bytes after the last entry")
		}
		off += size
	}
	return n, nil
}

// release lets go of what the last decoding pointed into, and of a
// counter buffer a burst grew.
func (d *Decoder) release() {
	clear(d.es)
	d.eb.d = decoder{}
	if cap(d.eb.counters) > 64<<10 {
		d.eb.counters = nil
	}
}

// transferBatch is the most entries DecodeBatches hands over at once.
const transferBatch = 256

// batch appends up to transferBatch of the block's next entries to es.
// Their counters share eb.counters, which it resets first.
func (eb *entryBlock) batch(es []shard.Entry) ([]shard.Entry, string) {
	eb.counters = eb.counters[:0]
	for eb.left > 0 && len(es) < transferBatch {
		es = append(es, shard.Entry{})
		e := &es[len(es)-1]
		if reason := eb.next(e); reason != "" {
			return es, reason
		}
		if r := policy.Route(e.Key); len(r) != len(e.Key) {
			e.Route = r
		}
	}
	return es, ""
}

// transferBlock checks the block at the start of b, which must be whole:
// a transfer arrives whole or not at all. It returns the block's payload
// and size, or the reason it is damaged.
func transferBlock(b []byte) (payload []byte, size int, reason string) {
	if len(b) < frameHead+frameTail {
		return nil, 0, "incomplete block"
	}
	n := int64(binary.LittleEndian.Uint32(b))
	switch {
	case crc32.Checksum(b[:4], castagnoli) != binary.LittleEndian.Uint32(b[4:]):
		return nil, 0, "block header checksum mismatch"
	case n < 1 || n > maxPayload:
		return nil, 0, fmt.Sprintf("block length %d out of range", n)
	case int64(len(b)) < frameHead+n+frameTail:
		return nil, 0, "block runs past the end"
	}
	payload = b[frameHead : frameHead+n]
	if crc32.Checksum(payload, castagnoli) != binary.LittleEndian.Uint32(b[frameHead+n:]) {
		return nil, 0, "block checksum mismatch"
	}
	return payload, int(frameHead + n + frameTail), ""
}

func transferCorrupt(off int, reason string) error {
	return &CorruptError{File: "transfer", Offset: int64(off), Reason: reason}
}

// ImportEntries imports every entry of b into m, as Map.Import does: a
// tombstone deletes its key, an entry expired at now is dropped. It returns
// how many entries it imported, and stops at the first that m refuses.
func ImportEntries(b []byte, m *shard.Map, now int64) (int, error) {
	n := 0
	_, err := DecodeBatches(b, func(es []shard.Entry) error {
		k, err := m.ImportBatch(es, now)
		n += k
		return err
	})
	return n, err
}
