package integrations

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The RESP framing the tap and the replay need: a request (an array of bulk
// strings, as every client library sends) and one whole reply, kept as its
// raw bytes, of any RESP2 or RESP3 type.

// readCommand reads one request. Inline commands are refused: no library
// under test sends them, and the recording keeps arguments, not bytes.
func readCommand(r *bufio.Reader) ([][]byte, error) {
	line, err := readLine(r)
	if err != nil {
		return nil, err
	}
	if len(line) == 0 || line[0] != '*' {
		return nil, fmt.Errorf("resp: not an array request: %q", line)
	}
	n, err := strconv.Atoi(line[1:])
	if err != nil || n < 1 {
		return nil, fmt.Errorf("resp: bad request length %q", line)
	}
	args := make([][]byte, n)
	for i := range args {
		if line, err = readLine(r); err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimPrefix(line, "$"))
		if err != nil || line[0] != '$' || size < 0 {
			return nil, fmt.Errorf("resp: bad bulk header %q", line)
		}
		args[i] = make([]byte, size+2)
		if _, err := io.ReadFull(r, args[i]); err != nil {
			return nil, err
		}
		args[i] = args[i][:size]
	}
	return args, nil
}

// encodeCommand is args as a RESP request.
func encodeCommand(args [][]byte) []byte {
	b := strconv.AppendInt([]byte{'*'}, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(strconv.AppendInt(append(b, '$'), int64(len(a)), 10), "\r\n"...)
		b = append(append(b, a...), "\r\n"...)
	}
	return b
}

// readReply appends one whole reply, raw, to dst.
func readReply(r *bufio.Reader, dst []byte) ([]byte, error) {
	line, err := readLine(r)
	if err != nil {
		return dst, err
	}
	if line == "" {
		return dst, errors.New("resp: empty reply line")
	}
	dst = append(append(dst, line...), "\r\n"...)
	n, _ := strconv.Atoi(line[1:])
	switch line[0] {
	case '+', '-', ':', ',', '_', '#', '(':
		return dst, nil
	case '$', '!', '=': // bulk string, bulk error, verbatim string
		if n < 0 {
			return dst, nil
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return dst, err
		}
		return append(dst, body...), nil
	case '*', '~', '>': // array, set, push
	case '%', '|': // map, attribute: n pairs
		n *= 2
	default:
		return dst, fmt.Errorf("resp: unknown reply type %q", line)
	}
	for i := 0; i < n; i++ {
		if dst, err = readReply(r, dst); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// readLine reads a line up to CRLF, without it.
func readLine(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(line, "\r\n") {
		return "", fmt.Errorf("resp: line without CRLF: %q", line)
	}
	return line[:len(line)-2], nil
}
