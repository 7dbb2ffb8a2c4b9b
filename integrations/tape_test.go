package integrations

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A tape is the RESP traffic between a library's test suite and rlstore, as
// the tap recorded it (tap_test.go), kept in testdata/replay/ so that CI,
// which cannot fetch the suites, can replay it (replay_test.go). It is text,
// one event a line, so that a change reads as a diff:
//
//	# a comment (what was recorded, with which command)
//	open 3 main                      connection 3 opens to the server "main"
//	3 1764273000123456789 PING       connection 3 sends PING at that unix ns
//	= +PONG                          …and gets this reply
//	close 3                          connection 3 closes
//
// Arguments and the reply's RESP lines are tokens separated by spaces, each
// in Go's double-quoted form when it is empty or holds a space, a quote, a
// backslash or a byte outside printable ASCII. A reply is its RESP lines, a
// bulk string's payload as its own token, so it is exact byte for byte.

// event is one line of a tape and, for a request, its reply.
type event struct {
	kind   string // "open", "close" or "req"
	conn   int
	server string   // open: which server (tapServers)
	at     int64    // req: the unix nanoseconds the server's clock stood at
	args   [][]byte // req
	reply  []byte   // req: the raw reply
	line   int      // where it is in the tape, for messages
}

// writeTape writes header (one comment line each) and events to w.
func writeTape(w io.Writer, header []string, events []event) error {
	bw := bufio.NewWriter(w)
	for _, h := range header {
		fmt.Fprintf(bw, "# %s\n", h)
	}
	for _, e := range events {
		switch e.kind {
		case "open":
			fmt.Fprintf(bw, "open %d %s\n", e.conn, e.server)
		case "close":
			fmt.Fprintf(bw, "close %d\n", e.conn)
		default:
			// What a replay does not compare is not kept (normalise).
			fmt.Fprintf(bw, "%d %d %s\n= %s\n", e.conn, e.at, joinTokens(e.args), replyTokens(normalise(e.args, e.reply)))
		}
	}
	return bw.Flush()
}

// readTape parses a tape.
func readTape(r io.Reader) ([]event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 16<<20)
	var events []event
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		var e event
		var err error
		switch {
		case line == "" || line[0] == '#':
			continue
		case strings.HasPrefix(line, "= "):
			if len(events) == 0 || events[len(events)-1].kind != "req" || events[len(events)-1].reply != nil {
				return nil, fmt.Errorf("line %d: a reply without its request", n)
			}
			toks, err := splitTokens(line[2:])
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			events[len(events)-1].reply = []byte{} // the connection closed without a reply
			if len(toks) > 0 {
				events[len(events)-1].reply = []byte(strings.Join(toks, "\r\n") + "\r\n")
			}
			continue
		case strings.HasPrefix(line, "open "):
			e.kind = "open"
			_, err = fmt.Sscanf(line, "open %d %s", &e.conn, &e.server)
		case strings.HasPrefix(line, "close "):
			e.kind = "close"
			_, err = fmt.Sscanf(line, "close %d", &e.conn)
		default:
			e.kind = "req"
			e, err = parseRequest(line)
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %q: %v", n, line, err)
		}
		e.line = n
		events = append(events, e)
	}
	return events, sc.Err()
}

func parseRequest(line string) (event, error) {
	e := event{kind: "req"}
	toks, err := splitTokens(line)
	if err != nil {
		return e, err
	}
	if len(toks) < 3 {
		return e, fmt.Errorf("want conn, time and a command")
	}
	if e.conn, err = strconv.Atoi(toks[0]); err != nil {
		return e, err
	}
	if e.at, err = strconv.ParseInt(toks[1], 10, 64); err != nil {
		return e, err
	}
	for _, t := range toks[2:] {
		e.args = append(e.args, []byte(t))
	}
	return e, nil
}

// replyTokens is a raw reply as tokens: its lines, a bulk payload apart.
func replyTokens(raw []byte) string {
	var toks [][]byte
	for len(raw) > 0 {
		i := bytes.Index(raw, []byte("\r\n"))
		if i < 0 { // not a whole reply: keep what there is
			toks, raw = append(toks, raw), nil
			break
		}
		line := raw[:i]
		toks, raw = append(toks, line), raw[i+2:]
		if n, err := strconv.Atoi(string(line[1:])); err == nil && n >= 0 && bytes.IndexByte([]byte("$!="), line[0]) >= 0 && len(raw) >= n+2 {
			toks, raw = append(toks, raw[:n]), raw[n+2:]
		}
	}
	return joinTokens(toks)
}

func joinTokens(toks [][]byte) string {
	var b strings.Builder
	for i, t := range toks {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(token(t))
	}
	return b.String()
}

// token is t as it is written: bare if it is plain printable ASCII.
func token(t []byte) string {
	if len(t) == 0 {
		return `""`
	}
	for _, c := range t {
		if c <= ' ' || c >= 0x7f || c == '"' || c == '\\' {
			return strconv.Quote(string(t))
		}
	}
	return string(t)
}

// splitTokens undoes joinTokens.
func splitTokens(s string) ([]string, error) {
	var toks []string
	for s != "" {
		if s[0] == '"' {
			q, err := strconv.QuotedPrefix(s)
			if err != nil {
				return nil, fmt.Errorf("bad quoted token in %q", s)
			}
			t, _ := strconv.Unquote(q)
			toks, s = append(toks, t), s[len(q):]
		} else {
			i := strings.IndexByte(s, ' ')
			if i < 0 {
				i = len(s)
			}
			toks, s = append(toks, s[:i]), s[i:]
		}
		if s != "" {
			if s[0] != ' ' {
				return nil, fmt.Errorf("no space after a token in %q", s)
			}
			s = s[1:]
		}
	}
	return toks, nil
}
