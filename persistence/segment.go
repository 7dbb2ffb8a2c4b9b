package persistence

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/rlstore/rlstore/persistence/vfs"
)

// segment is one log file being written.
type segment struct {
	gen    uint64
	path   string
	f      vfs.File // nil for a segment replayed at open, which is never written again
	buf    []byte   // blocks encoded but not yet written
	size   int64    // bytes in the file
	whole  int64    // bytes in the file up to the end of the last write that succeeded
	header int64    // bytes of its header; 0 for a replayed segment
	synced int64    // bytes known to be on disk
	err    error    // a failed write or fsync: the segment takes no more
}

// createSegment creates a log segment holding only its header, durably,
// timing the segment's fsync with t.
func createSegment(fsys vfs.FS, dir string, gen uint64, now int64, t *fsyncTimer) (*segment, error) {
	seg := &segment{gen: gen, path: filepath.Join(dir, logName(gen))}
	f, err := fsys.OpenFile(seg.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	hdr := appendHeader(nil, magicLog, now, gen)
	_, err = f.Write(hdr)
	if err == nil {
		err = t.sync(f)
	}
	if err == nil {
		err = syncDir(fsys, dir)
	}
	if err != nil {
		_ = f.Close()
		_ = fsys.Remove(seg.path) // best effort: an empty segment left behind is harmless
		return nil, fmt.Errorf("persistence: creating %s: %w", seg.path, err)
	}
	seg.f, seg.size, seg.synced, seg.whole = f, int64(len(hdr)), int64(len(hdr)), int64(len(hdr))
	seg.header = seg.size
	return seg, nil
}

// write writes out the segment's buffer.
func (seg *segment) write() error {
	if seg.err != nil {
		seg.buf = seg.buf[:0] // lost: the next snapshot holds these changes
		return seg.err
	}
	if len(seg.buf) == 0 {
		return nil
	}
	if seg.f == nil {
		return ErrClosed
	}
	n, err := seg.f.Write(seg.buf)
	seg.size += int64(n)
	if cap(seg.buf) > 4*writeChunk {
		seg.buf = nil // a burst's buffer (a FLUSHALL, a huge key) is not worth keeping
	}
	seg.buf = seg.buf[:0]
	if err != nil {
		seg.err = fmt.Errorf("persistence: writing %s: %w", seg.path, err)
	} else {
		seg.whole = seg.size
	}
	return seg.err
}

// sync fsyncs what was written. After a failed fsync nothing is known about
// what reached the disk, so the segment takes no more. t times the fsync.
func (seg *segment) sync(t *fsyncTimer) error {
	if seg.err != nil || seg.synced == seg.size {
		return seg.err
	}
	if seg.f == nil {
		return ErrClosed
	}
	if err := t.sync(seg.f); err != nil {
		seg.err = fmt.Errorf("persistence: fsync %s: %w", seg.path, err)
		return seg.err
	}
	seg.synced = seg.size
	return nil
}

// writeChunk bounds a segment's buffer during a flush. Buffering a whole
// interval's changes before writing them cost 8 bytes of RSS a key while 1M
// keys were filled at 170k a second: the buffer, and the copies append left
// behind as it doubled, stayed resident after the fill. With 256 KiB chunks
// each segment kept a 512 KiB buffer (0.5 B a key at 1M keys); 32 KiB chunks
// still write a busy fill's 4 MB a second in 130 writes. A segment's buffer
// is made once, with segmentBuffer bytes: the feed hands over a shard's
// changes a bounded piece at a time, so a chunk and one piece fit in it and
// appends never regrow it.
const (
	writeChunk    = 32 << 10
	segmentBuffer = writeChunk + writeChunk/2
)
