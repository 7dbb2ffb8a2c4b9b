package persistence

import (
	"bytes"
	"errors"
	"io"

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

// DecodeEntries calls fn for each entry AppendEntries wrote into b, in
// order, tombstones included. The entry and its slices are valid only
// during the call. Its Route is set, so an internal policy key lands in its
// user key's shard. It stops at fn's first error, and returns the number of
// entries fn accepted and an error wrapping ErrCorrupt for damaged input.
func DecodeEntries(b []byte, fn func(*shard.Entry) error) (int, error) {
	br := newBlockReader(bytes.NewReader(b), int64(len(b)), "transfer")
	var eb entryBlock
	var e shard.Entry
	n := 0
	for {
		payload, err := br.next()
		switch {
		case errors.Is(err, io.EOF):
			return n, nil
		case err != nil:
			return n, transferErr(br, err)
		case payload[0] != kindEntries:
			return n, br.corrupt(br.last, "not an entries block")
		}
		if reason := eb.parse(payload); reason != "" {
			return n, br.corrupt(br.last, reason)
		}
		for eb.left > 0 {
			if reason := eb.next(&e); reason != "" {
				return n, br.corrupt(br.last, reason)
			}
			e.Route = policy.Route(e.Key)
			if err := fn(&e); err != nil {
				return n, err
			}
			n++
		}
		if len(eb.d.b) != 0 {
			return n, br.corrupt(br.last, "trailing bytes after the last entry")
		}
	}
}

// transferErr turns a torn-tail report, which in a file means a crash cut
// the last write, into corruption: a transfer arrives whole or not at all.
func transferErr(br *blockReader, err error) error {
	var torn *tornError
	if errors.As(err, &torn) {
		return br.corrupt(torn.off, torn.reason)
	}
	return err
}

// ImportEntries imports every entry of b into m, as Map.Import does: a
// tombstone deletes its key, an entry expired at now is dropped. It returns
// how many entries it imported, and stops at the first that m refuses.
func ImportEntries(b []byte, m *shard.Map, now int64) (int, error) {
	return DecodeEntries(b, func(e *shard.Entry) error { return m.Import(*e, now) })
}
