package persistence

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Every file is a sequence of blocks, each checksummed on its own:
//
//	length   uint32 little-endian: bytes of payload, at least 1
//	hcrc     uint32 little-endian: CRC-32C of the 4 length bytes
//	payload  its first byte is the block's kind
//	crc      uint32 little-endian: CRC-32C of the payload
//
// Checking the length on its own means a flipped byte in a length is reported
// as corruption where it is, rather than read as a record running past the
// end of the file, which is what a torn write looks like.
//
// A file's first block is its header: kindHeader, an 8-byte magic naming the
// file type, the format version (uvarint), the time it was created (varint,
// unix nanoseconds) and a generation (uvarint).
const (
	frameHead  = 8
	frameTail  = 4
	maxPayload = 1 << 30
)

// Block kinds. They are stored on disk: append only.
const (
	kindHeader  byte = 1 // every file's first block
	kindEntries byte = 2 // snapshot and log: a batch of entries
	kindEnd     byte = 3 // snapshot: the last block, with the entry count
	kindFlush   byte = 4 // log: every key was deleted (FLUSHALL)
	kindPut     byte = 5 // policies: name, definition
	kindDelete  byte = 6 // policies: name
	kindDelta   byte = 7 // transfers to a backup only, never on disk: entries, some of them deltas
)

// File types: an 8-byte magic and the version this package writes.
const (
	magicSnapshot = "RLSTSNAP"
	magicLog      = "RLSTALOG"
	magicPolicies = "RLSTPOLS"
	formatVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every error that reports damaged data.
var ErrCorrupt = errors.New("persistence: corrupt data")

// CorruptError reports damage in a file, other than a torn last record.
type CorruptError struct {
	File   string
	Offset int64 // byte offset of the damaged block or record
	Reason string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("persistence: %s is corrupt at byte %d: %s", e.File, e.Offset, e.Reason)
}

func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// A Warning reports damage that opening repaired by itself: a torn last
// record, left by a crash mid-write, was cut off. The caller logs it.
type Warning struct {
	File    string
	Offset  int64 // where the file now ends
	Dropped int64 // bytes cut off
	Reason  string
}

func (w Warning) String() string {
	return fmt.Sprintf("persistence: %s: truncated a torn last record at byte %d (%d bytes dropped): %s",
		w.File, w.Offset, w.Dropped, w.Reason)
}

// beginBlock appends the start of a block of kind to buf and returns the offset
// endBlock needs.
func beginBlock(buf []byte, kind byte) ([]byte, int) {
	start := len(buf)
	return append(buf, 0, 0, 0, 0, 0, 0, 0, 0, kind), start
}

// endBlock fills in the header of the block begun at start and appends its checksum.
func endBlock(buf []byte, start int) []byte {
	payload := buf[start+frameHead:]
	binary.LittleEndian.PutUint32(buf[start:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(buf[start+4:], crc32.Checksum(buf[start:start+4], castagnoli))
	return binary.LittleEndian.AppendUint32(buf, crc32.Checksum(payload, castagnoli))
}

// appendHeader appends a file header block.
func appendHeader(buf []byte, magic string, created int64, gen uint64) []byte {
	buf, start := beginBlock(buf, kindHeader)
	buf = append(buf, magic...)
	buf = binary.AppendUvarint(buf, formatVersion)
	buf = binary.AppendVarint(buf, created)
	buf = binary.AppendUvarint(buf, gen)
	return endBlock(buf, start)
}

// header is a file header's contents.
type header struct {
	created int64
	gen     uint64
}

// parseHeader checks that payload is a header for magic in a version this package reads.
func parseHeader(payload []byte, magic string) (header, string) {
	d := decoder{b: payload}
	if d.byte() != kindHeader || string(d.bytes(len(magic))) != magic {
		return header{}, "not a " + fileKind(magic) + " (bad magic)"
	}
	if v := d.uvarint(); v != formatVersion {
		return header{}, fmt.Sprintf("format version %d, this build reads %d", v, formatVersion)
	}
	h := header{created: d.varint(), gen: d.uvarint()}
	if d.bad || len(d.b) != 0 {
		return header{}, "malformed header"
	}
	return h, ""
}

func fileKind(magic string) string {
	switch magic {
	case magicSnapshot:
		return "snapshot"
	case magicLog:
		return "log"
	}
	return "policy file"
}

// blockReader reads the blocks of one file, telling a torn tail from corruption.
type blockReader struct {
	name string
	r    *bufio.Reader
	off  int64 // where the next block starts
	last int64 // where the block next returned last starts
	size int64 // the file's size
	buf  []byte
}

func newBlockReader(r io.Reader, size int64, name string) *blockReader {
	return &blockReader{name: name, r: bufio.NewReaderSize(r, int(min(max(size, 16), 1<<20))), size: size}
}

// tornError says the file's valid part ends at off: the rest is a torn write.
type tornError struct {
	off    int64
	reason string
}

func (e *tornError) Error() string { return e.reason }

// next returns the next block's payload, valid until the next call. At the end
// of the file it returns io.EOF; for a torn last block a *tornError; for
// anything else wrong a *CorruptError.
func (br *blockReader) next() ([]byte, error) {
	remain := br.size - br.off
	switch {
	case remain == 0:
		return nil, io.EOF
	case remain < frameHead:
		return nil, &tornError{br.off, "incomplete block header"}
	}
	var h [frameHead]byte
	if _, err := io.ReadFull(br.r, h[:]); err != nil {
		return nil, br.ioErr(err)
	}
	n := int64(binary.LittleEndian.Uint32(h[:]))
	if crc32.Checksum(h[:4], castagnoli) != binary.LittleEndian.Uint32(h[4:]) {
		if h == [frameHead]byte{} && br.restIsZero() {
			return nil, &tornError{br.off, "zero-filled tail"}
		}
		return nil, br.corrupt(br.off, "block header checksum mismatch")
	}
	if n < 1 || n > maxPayload {
		return nil, br.corrupt(br.off, fmt.Sprintf("block length %d out of range", n))
	}
	if remain < frameHead+n+frameTail {
		return nil, &tornError{br.off, "last block runs past the end of the file"}
	}
	return br.payload(n)
}

// payload reads a block's payload of n bytes and checks its checksum.
func (br *blockReader) payload(n int64) ([]byte, error) {
	if int64(cap(br.buf)) < n+frameTail {
		br.buf = make([]byte, n+frameTail)
	}
	b := br.buf[:n+frameTail]
	if _, err := io.ReadFull(br.r, b); err != nil {
		return nil, br.ioErr(err)
	}
	start := br.off
	br.last = start
	br.off += frameHead + n + frameTail
	if crc32.Checksum(b[:n], castagnoli) != binary.LittleEndian.Uint32(b[n:]) {
		if br.off == br.size {
			return nil, &tornError{start, "last block checksum mismatch"}
		}
		return nil, br.corrupt(start, "block checksum mismatch")
	}
	return b[:n], nil
}

// restIsZero reports whether every byte left in the file is zero, as a
// filesystem leaves the tail of a file extended but not written before a crash.
func (br *blockReader) restIsZero() bool {
	for {
		b, err := br.r.ReadByte()
		if err != nil {
			return true
		}
		if b != 0 {
			return false
		}
	}
}

func (br *blockReader) corrupt(off int64, reason string) error {
	return &CorruptError{File: br.name, Offset: off, Reason: reason}
}

func (br *blockReader) ioErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return br.corrupt(br.off, "file shorter than its size") // changed while we read
	}
	return fmt.Errorf("persistence: reading %s: %w", br.name, err)
}
