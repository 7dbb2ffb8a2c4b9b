package server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// respNode is a reply parsed with its RESP type kept, which client
// libraries hide: redis-cli asserts that argument flags are status replies,
// not bulk strings, and a test must be able to see the difference.
type respNode struct {
	kind  byte       // the type byte: + - : $ * % ~ _ , # = ( |
	str   string     // the text of a simple, bulk, number or verbatim reply
	null  bool       // _, $-1 or *-1
	elems []respNode // of an array, set or map (keys and values interleaved)
}

// readRESP reads one reply of either protocol.
func readRESP(r *bufio.Reader) (respNode, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return respNode{}, err
	}
	line = strings.TrimSuffix(line, "\r\n")
	if line == "" {
		return respNode{}, fmt.Errorf("empty reply line")
	}
	n := respNode{kind: line[0], str: line[1:]}
	switch n.kind {
	case '_':
		n.null = true
		return n, nil
	case '+', '-', ':', ',', '#', '(':
		return n, nil
	case '$', '=', '!':
		return readRESPBulk(r, n)
	case '*', '~', '%', '>', '|':
		return readRESPAggregate(r, n)
	}
	return n, fmt.Errorf("unknown reply type %q", n.kind)
}

func readRESPBulk(r *bufio.Reader, n respNode) (respNode, error) {
	size, err := strconv.Atoi(n.str)
	if err != nil || size < 0 {
		n.null, n.str = true, ""
		return n, err
	}
	buf := make([]byte, size+2)
	if _, err := io.ReadFull(r, buf); err != nil {
		return n, err
	}
	n.str = string(buf[:size])
	return n, nil
}

func readRESPAggregate(r *bufio.Reader, n respNode) (respNode, error) {
	size, err := strconv.Atoi(n.str)
	if err != nil {
		return n, err
	}
	n.str = ""
	if size < 0 {
		n.null = true
		return n, nil
	}
	if n.kind == '%' || n.kind == '|' {
		size *= 2
	}
	for range size {
		e, err := readRESP(r)
		if err != nil {
			return n, err
		}
		n.elems = append(n.elems, e)
	}
	if n.kind == '|' { // an attribute precedes the reply it describes
		return readRESP(r)
	}
	return n, nil
}

// parseRESP parses b, which holds exactly one reply.
func parseRESP(t testing.TB, b []byte) respNode {
	t.Helper()
	r := bufio.NewReader(bytes.NewReader(b))
	n, err := readRESP(r)
	require.NoError(t, err)
	_, err = r.ReadByte()
	require.ErrorIs(t, err, io.EOF, "bytes after the reply")
	return n
}

// resp2 is the RESP2 reply Redis sends a RESP2 client where it sends n to a
// RESP3 one: maps flatten into arrays, sets become arrays, null is a null
// bulk string, doubles are bulk strings, booleans integers.
func (n respNode) resp2() respNode {
	switch n.kind {
	case '%', '~':
		n.kind = '*'
	case '_':
		n.kind, n.null = '$', true
	case ',', '=', '(':
		n.kind = '$'
	case '#':
		n.kind, n.str = ':', map[string]string{"t": "1", "f": "0"}[n.str]
	}
	if n.elems != nil {
		elems := make([]respNode, len(n.elems))
		for i, e := range n.elems {
			elems[i] = e.resp2()
		}
		n.elems = elems
	}
	return n
}

// String shows the node with its types, for failure messages.
func (n respNode) String() string {
	var b strings.Builder
	n.format(&b)
	return b.String()
}

func (n respNode) format(b *strings.Builder) {
	b.WriteByte(n.kind)
	switch {
	case n.null:
		b.WriteString("null")
	case n.elems != nil || n.kind == '*' || n.kind == '%' || n.kind == '~':
		b.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			e.format(b)
		}
		b.WriteByte(']')
	default:
		b.WriteString(strconv.Quote(n.str))
	}
}

// rawCall sends args on conn, a connection no other goroutine reads, and
// returns the reply's bytes as they came.
func rawCall(t testing.TB, conn net.Conn, args ...string) []byte {
	t.Helper()
	_, err := conn.Write([]byte(respCmd(args...)))
	require.NoError(t, err)
	var got bytes.Buffer
	r := bufio.NewReader(io.TeeReader(conn, &got))
	_, err = readRESP(r)
	require.NoError(t, err, "reading the reply to %v", args)
	require.Zero(t, r.Buffered(), "more than one reply to %v", args)
	return got.Bytes()
}

// firstDiff describes the first place where got differs from want, in type
// or value, or returns "" if they are equal.
func firstDiff(want, got respNode, path string) string {
	if want.kind != got.kind || want.null != got.null || want.str != got.str || len(want.elems) != len(got.elems) {
		return fmt.Sprintf("at %s: want %.200s, got %.200s", path, want, got)
	}
	for i := range want.elems {
		if d := firstDiff(want.elems[i], got.elems[i], path+"/"+strconv.Itoa(i)); d != "" {
			return d
		}
	}
	return ""
}

// sortedNodes returns every node of n as its type and text (aggregates as
// their type and length), sorted: a tree's contents without their order.
func (n respNode) sortedNodes() []string {
	all := n.nodes(nil)
	sort.Strings(all)
	return all
}

func (n respNode) nodes(dst []string) []string {
	if n.elems == nil {
		dst = append(dst, n.String())
	} else {
		dst = append(dst, string(n.kind)+strconv.Itoa(len(n.elems)))
	}
	for _, e := range n.elems {
		dst = e.nodes(dst)
	}
	return dst
}
