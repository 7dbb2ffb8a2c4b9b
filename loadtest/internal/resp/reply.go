package resp

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// Reply kinds, the RESP2 type bytes.
const (
	KindSimple  = '+'
	KindError   = '-'
	KindInteger = ':'
	KindBulk    = '$'
	KindArray   = '*'
)

// maxBulk caps a bulk reply the reader will buffer, so that a broken server
// cannot make the load generator allocate without bound.
const maxBulk = 64 << 20

// maxDepth caps array nesting.
const maxDepth = 8

// ErrProtocol reports a reply that is not valid RESP2.
var ErrProtocol = errors.New("loadtest: protocol error")

// Reply is one parsed RESP2 reply. Its byte slices are reused by the next
// read: copy what must outlive it.
type Reply struct {
	Kind byte    // one of the Kind constants
	Int  int64   // integer value, bulk length or array length (-1 for nil)
	Str  []byte  // simple string, error or bulk payload
	Ints []int64 // top-level array elements that are integers, in order
	// IntArray is true when every top-level array element was an integer.
	IntArray bool
}

// IsError reports whether the reply is an error reply.
func (r *Reply) IsError() bool { return r.Kind == KindError }

// Reader parses RESP2 replies from a buffered stream without allocating in
// the steady state. It is not safe for concurrent use.
type Reader struct {
	br *bufio.Reader
}

// NewReader returns a Reader over r.
func NewReader(r io.Reader) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10)}
}

// Read parses the next reply into rep.
func (rd *Reader) Read(rep *Reply) error {
	rep.Str = rep.Str[:0]
	rep.Ints = rep.Ints[:0]
	rep.IntArray = false
	kind, line, err := rd.line()
	if err != nil {
		return err
	}
	rep.Kind = kind
	switch kind {
	case KindSimple, KindError:
		rep.Str = append(rep.Str, line...)
		return nil
	case KindInteger:
		rep.Int, err = parseInt(line)
		return err
	case KindBulk:
		return rd.bulkInto(rep, line)
	case KindArray:
		return rd.arrayInto(rep, line)
	}
	return fmt.Errorf("%w: unexpected type byte %q", ErrProtocol, kind)
}

func (rd *Reader) bulkInto(rep *Reply, line []byte) error {
	n, err := parseLen(line)
	if err != nil || n < 0 {
		rep.Int = -1
		return err
	}
	rep.Int = n
	rep.Str, err = rd.payload(rep.Str, n)
	return err
}

func (rd *Reader) arrayInto(rep *Reply, line []byte) error {
	n, err := parseLen(line)
	if err != nil || n < 0 {
		rep.Int = -1
		return err
	}
	rep.Int = n
	rep.IntArray = true
	for range n {
		v, isInt, err := rd.element(1)
		if err != nil {
			return err
		}
		if isInt {
			rep.Ints = append(rep.Ints, v)
		}
		rep.IntArray = rep.IntArray && isInt
	}
	return nil
}

// element reads one array element, returning its value when it is an integer
// and skipping it otherwise.
func (rd *Reader) element(depth int) (int64, bool, error) {
	if depth > maxDepth {
		return 0, false, fmt.Errorf("%w: arrays nested too deep", ErrProtocol)
	}
	kind, line, err := rd.line()
	if err != nil {
		return 0, false, err
	}
	switch kind {
	case KindInteger:
		v, err := parseInt(line)
		return v, err == nil, err
	case KindSimple, KindError:
		return 0, false, nil
	case KindBulk:
		n, err := parseLen(line)
		if err != nil || n < 0 {
			return 0, false, err
		}
		return 0, false, rd.skip(n + 2)
	case KindArray:
		return 0, false, rd.skipArray(line, depth)
	}
	return 0, false, fmt.Errorf("%w: unexpected type byte %q", ErrProtocol, kind)
}

func (rd *Reader) skipArray(line []byte, depth int) error {
	n, err := parseLen(line)
	if err != nil {
		return err
	}
	for range max(n, 0) {
		if _, _, err := rd.element(depth + 1); err != nil {
			return err
		}
	}
	return nil
}

// line returns the type byte and the rest of the next line without CRLF. The
// slice is only valid until the next read.
func (rd *Reader) line() (byte, []byte, error) {
	b, err := rd.br.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, nil, fmt.Errorf("%w: line too long", ErrProtocol)
		}
		return 0, nil, err
	}
	if len(b) < 3 || b[len(b)-2] != '\r' {
		return 0, nil, fmt.Errorf("%w: bad line %q", ErrProtocol, b)
	}
	return b[0], b[1 : len(b)-2], nil
}

func (rd *Reader) payload(dst []byte, n int64) ([]byte, error) {
	dst = append(dst[:0], make([]byte, n+2)...)
	if _, err := io.ReadFull(rd.br, dst); err != nil {
		return dst[:0], err
	}
	if dst[n] != '\r' || dst[n+1] != '\n' {
		return dst[:0], fmt.Errorf("%w: bulk not terminated by CRLF", ErrProtocol)
	}
	return dst[:n], nil
}

func (rd *Reader) skip(n int64) error {
	_, err := rd.br.Discard(int(n))
	return err
}

func parseLen(b []byte) (int64, error) {
	n, err := parseInt(b)
	if err != nil {
		return 0, err
	}
	if n < -1 || n > maxBulk {
		return 0, fmt.Errorf("%w: length %d out of range", ErrProtocol, n)
	}
	return n, nil
}

// parseInt parses a base-10 int64 without allocating.
func parseInt(b []byte) (int64, error) {
	if len(b) == 0 || len(b) > 20 {
		return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
	}
	neg := b[0] == '-'
	if neg {
		b = b[1:]
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' || n > (1<<63)/10 {
			return 0, fmt.Errorf("%w: bad integer %q", ErrProtocol, b)
		}
		n = n*10 + uint64(c-'0')
	}
	return toSigned(n, neg, b)
}

func toSigned(n uint64, neg bool, b []byte) (int64, error) {
	switch {
	case neg && n <= 1<<63:
		return -int64(n-1) - 1, nil
	case !neg && n < 1<<63:
		return int64(n), nil
	}
	return 0, fmt.Errorf("%w: integer %q out of range", ErrProtocol, b)
}
