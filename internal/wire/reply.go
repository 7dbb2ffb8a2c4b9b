package wire

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// maxReplyDepth bounds nesting in a reply; rlstore's deepest is 3.
const maxReplyDepth = 16

// ErrBadReply is a peer's reply that is not RESP.
var ErrBadReply = errors.New("wire: malformed reply")

// ReadReply appends one whole reply, RESP2 or RESP3, to dst exactly as
// it came, so that it can be passed on to a client untouched.
func ReadReply(r *bufio.Reader, dst []byte) ([]byte, error) { return readReply(r, dst, 0) }

func readReply(r *bufio.Reader, dst []byte, depth int) ([]byte, error) {
	if depth > maxReplyDepth {
		return dst, ErrBadReply
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return dst, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return dst, ErrBadReply
	}
	dst = append(dst, line...)
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return dst, nil
	case '$', '=', '!':
		return readBulk(r, dst, line)
	case '*', '~', '>', '%', '|':
		return readAggregate(r, dst, line, depth)
	}
	return dst, ErrBadReply
}

// header is the length in a bulk or aggregate header line ("$12\r\n"):
// decimal digits, or -1 for a null.
func header(line []byte) (int, error) {
	digits := line[1 : len(line)-2]
	if len(digits) == 2 && digits[0] == '-' && digits[1] == '1' {
		return -1, nil
	}
	if len(digits) == 0 || len(digits) > 10 {
		return 0, ErrBadReply
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, ErrBadReply
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

func readBulk(r *bufio.Reader, dst, line []byte) ([]byte, error) {
	n, err := header(line)
	if err != nil || n < 0 {
		return dst, err // $-1 is a null
	}
	start := len(dst)
	dst = append(dst, make([]byte, n+2)...)
	if _, err := io.ReadFull(r, dst[start:]); err != nil {
		return dst, err
	}
	if dst[len(dst)-2] != '\r' || dst[len(dst)-1] != '\n' {
		return dst, ErrBadReply
	}
	return dst, nil
}

func readAggregate(r *bufio.Reader, dst, line []byte, depth int) ([]byte, error) {
	n, err := header(line)
	if err != nil || n < 0 {
		return dst, err
	}
	if line[0] == '%' || line[0] == '|' {
		n *= 2
	}
	for range n {
		if dst, err = readReply(r, dst, depth+1); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// ReplyEnd returns the length of the whole reply at the start of b, or 0
// if b holds only part of it. It checks what ReadReply checks.
func ReplyEnd(b []byte) (int, error) { return replyEnd(b, 0) }

func replyEnd(b []byte, depth int) (int, error) {
	if depth > maxReplyDepth {
		return 0, ErrBadReply
	}
	i := bytes.IndexByte(b, '\n')
	switch {
	case i < 0:
		return 0, nil
	case i < 2 || b[i-1] != '\r':
		return 0, ErrBadReply
	}
	line := b[:i+1]
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return i + 1, nil
	case '$', '=', '!':
		n, err := header(line)
		if err != nil || n < 0 {
			return i + 1, err
		}
		end := i + 1 + n + 2
		if end > len(b) {
			return 0, nil
		}
		if b[end-2] != '\r' || b[end-1] != '\n' {
			return 0, ErrBadReply
		}
		return end, nil
	case '*', '~', '>', '%', '|':
		n, err := header(line)
		if err != nil || n < 0 {
			return i + 1, err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		pos := i + 1
		for range n {
			k, err := replyEnd(b[pos:], depth+1)
			if err != nil || k == 0 {
				return 0, err
			}
			pos += k
		}
		return pos, nil
	}
	return 0, ErrBadReply
}
