package cluster

import (
	"bufio"
	"errors"
	"io"
	"strconv"

	"github.com/tidwall/redcon"
)

// maxReplyDepth bounds nesting in a peer's reply; rlstore's deepest is 3.
const maxReplyDepth = 16

// errBadReply is a peer's reply that is not RESP.
var errBadReply = errors.New("cluster: malformed reply from peer")

// appendCommand appends args as a RESP array of bulk strings.
func appendCommand(b []byte, args [][]byte) []byte {
	b = redcon.AppendArray(b, len(args))
	for _, a := range args {
		b = redcon.AppendBulk(b, a)
	}
	return b
}

// readReply appends one whole reply, RESP2 or RESP3, to dst exactly as
// it came, so that it can be passed on to a client untouched.
func readReply(r *bufio.Reader, dst []byte, depth int) ([]byte, error) {
	if depth > maxReplyDepth {
		return dst, errBadReply
	}
	line, err := r.ReadSlice('\n')
	if err != nil {
		return dst, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return dst, errBadReply
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
	return dst, errBadReply
}

func header(line []byte) (int, error) {
	n, err := strconv.Atoi(string(line[1 : len(line)-2]))
	if err != nil || n < -1 {
		return 0, errBadReply
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
		return dst, errBadReply
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
