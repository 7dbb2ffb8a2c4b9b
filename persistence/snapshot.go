package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
)

// A snapshot file is a header block, entries blocks holding every live key
// (no tombstones), and an end block holding the number of entries written.
// It is written whole to a temp file and renamed, so a snapshot that is torn or
// lacks its end block is corrupt, never merely truncated.

// snapInfo describes a snapshot written or loaded.
type snapInfo struct {
	gen     uint64
	created int64 // unix nanoseconds
	entries int64 // entries in the file
	bytes   int64
}

// A snapshot encodes a shard's entries snapshotPiece at a time, each piece
// an entries block, and writes whenever writeChunk bytes are buffered, so
// its buffer stays under snapshotBuffer. Encoding a shard at once and
// writing 1 MiB at a time grew the buffer by doubling to 2 MiB: 4 MB of
// garbage per snapshot, there when a first snapshot runs during a fill.
const (
	snapshotPiece  = 512
	snapshotBuffer = 2 * writeChunk
)

// exportFunc appends shard i's entries to dst. Their keys and counters may
// share memory with those of its previous call: use them before the next.
type exportFunc func(i int, dst []shard.Entry) []shard.Entry

// writeSnapshot writes what export returns for shards 0 … shards-1 to path,
// crash-safely, leaving out entries expired at now (unix nanoseconds). t, if
// not nil, times its fsync.
func writeSnapshot(fsys vfs.FS, path string, shards int, export exportFunc, gen uint64, now int64, t *fsyncTimer) (snapInfo, error) {
	info := snapInfo{gen: gen, created: now}
	size, err := writeAtomic(fsys, path, t, func(f vfs.File) error {
		buf := appendHeader(make([]byte, 0, snapshotBuffer), magicSnapshot, now, gen)
		var es []shard.Entry
		for i := range shards {
			es = export(i, es[:0])
			live := es[:0]
			for _, e := range es {
				if e.Expiry() > now {
					live = append(live, e)
				}
			}
			info.entries += int64(len(live))
			for len(live) > 0 {
				n := min(len(live), snapshotPiece)
				if buf = appendEntries(buf, live[:n], now); len(buf) >= writeChunk {
					if _, err := f.Write(buf); err != nil {
						return err
					}
					buf = buf[:0]
				}
				live = live[n:]
			}
		}
		buf, start := beginBlock(buf, kindEnd)
		buf = endBlock(binary.AppendUvarint(buf, uint64(info.entries)), start)
		_, err := f.Write(buf)
		return err
	})
	info.bytes = size
	return info, err
}

// loadSnapshotFile loads the snapshot at path into m; see loadSnapshot.
func loadSnapshotFile(fsys vfs.FS, path string, m *shard.Map, now int64) (snapInfo, error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return snapInfo{}, fmt.Errorf("persistence: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return snapInfo{}, fmt.Errorf("persistence: %w", err)
	}
	return loadSnapshot(f, st.Size(), filepath.Base(path), m, now)
}

// loadSnapshot imports the snapshot in r, of size bytes and called name in
// errors, into m, dropping entries expired at now. Any damage is a *CorruptError.
func loadSnapshot(r io.Reader, size int64, name string, m *shard.Map, now int64) (snapInfo, error) {
	br := newBlockReader(r, size, name)
	payload, err := br.next()
	if err != nil {
		return snapInfo{}, strict(br, err)
	}
	h, reason := parseHeader(payload, magicSnapshot)
	if reason != "" {
		return snapInfo{}, br.corrupt(0, reason)
	}
	info := snapInfo{gen: h.gen, created: h.created, bytes: size}
	var eb entryBlock
	for {
		payload, err := br.next()
		if err != nil {
			return info, strict(br, err)
		}
		switch payload[0] {
		case kindEntries:
			n, err := importBlock(br, payload, m, now, false, &eb)
			info.entries += int64(n)
			if err != nil {
				return info, err
			}
		case kindEnd:
			return info, endSnapshot(br, payload, info.entries)
		default:
			return info, br.corrupt(br.last, fmt.Sprintf("unexpected block kind %d", payload[0]))
		}
	}
}

// endSnapshot checks a snapshot's end block and that nothing follows it.
func endSnapshot(br *blockReader, payload []byte, entries int64) error {
	d := decoder{b: payload[1:]}
	if n := d.uvarint(); d.bad || len(d.b) != 0 || n != uint64(entries) {
		return br.corrupt(br.last, fmt.Sprintf("end block counts %d entries, the file holds %d", n, entries))
	}
	if br.off != br.size {
		return br.corrupt(br.off, "data after the end block")
	}
	return nil
}

// strict turns the end of a snapshot's data before its end block into corruption.
func strict(br *blockReader, err error) error {
	var torn *tornError
	switch {
	case errors.Is(err, io.EOF):
		return br.corrupt(br.off, "snapshot ends without its end block")
	case errors.As(err, &torn):
		return br.corrupt(torn.off, "snapshot truncated: "+torn.reason)
	}
	return err
}
