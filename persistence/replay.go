package persistence

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/shard"
)

// replayLogFile replays the segment at path into m; see replayLog. A torn tail
// is truncated on disk.
func replayLogFile(fsys vfs.FS, path string, m *shard.Map, now int64) (size, records int64, warn *Warning, err error) {
	f, err := fsys.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		return 0, 0, nil, fmt.Errorf("persistence: %w", err)
	}
	st, err := f.Stat()
	if err == nil {
		size, records, warn, err = replayLog(f, st.Size(), filepath.Base(path), m, now)
	}
	f.Close()
	if err == nil && warn != nil {
		err = truncateTorn(fsys, path, size)
	}
	return size, records, warn, err
}

// replayLog applies the log segment in r, of size bytes and called name in
// errors, to m, dropping states expired at now. It returns the size of the
// segment's valid part and the records applied. A torn last record is left out
// and reported in warn; damage anywhere else is a *CorruptError.
func replayLog(r io.Reader, size int64, name string, m *shard.Map, now int64) (valid, records int64, warn *Warning, err error) {
	br := newBlockReader(r, size, name)
	var eb entryBlock
	for first := true; ; first = false {
		payload, err := br.next()
		var torn *tornError
		switch {
		case errors.Is(err, io.EOF):
			return br.off, records, nil, nil
		case errors.As(err, &torn):
			return torn.off, records, &Warning{File: name, Offset: torn.off, Dropped: size - torn.off, Reason: torn.reason}, nil
		case err != nil:
			return br.last, records, nil, err
		}
		n, err := applyLogBlock(br, payload, first, m, now, &eb)
		records += n
		if err != nil {
			return br.last, records, nil, err
		}
	}
}

// applyLogBlock applies one block of a log segment.
func applyLogBlock(br *blockReader, payload []byte, first bool, m *shard.Map, now int64, eb *entryBlock) (int64, error) {
	switch {
	case first:
		if _, reason := parseHeader(payload, magicLog); reason != "" {
			return 0, br.corrupt(br.last, reason)
		}
		return 0, nil
	case payload[0] == kindEntries:
		n, err := importBlock(br, payload, m, now, true, eb)
		return int64(n), err
	case payload[0] == kindFlush && len(payload) == 1:
		m.Flush()
		return 1, nil
	}
	return 0, br.corrupt(br.last, fmt.Sprintf("unexpected block kind %d", payload[0]))
}
