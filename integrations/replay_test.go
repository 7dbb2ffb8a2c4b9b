package integrations

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tapeDir holds the tapes the libraries' own suites recorded (tap_test.go).
const tapeDir = "testdata/replay"

// TestReplay replays every tape in testdata/replay against fresh rlstores
// and fails if any reply differs from the recorded one: CI cannot fetch the
// libraries' suites, but it can hold rlstore to what it answered them when
// they passed. Each request is decided at the instant it was recorded at
// (DEBUG SET-CLOCK), so replies with times in them must match exactly too;
// only what normalise lists is compared loosely.
func TestReplay(t *testing.T) {
	tapes, err := filepath.Glob(filepath.Join(tapeDir, "*.tape"))
	if err != nil || len(tapes) == 0 {
		t.Fatalf("no tapes in %s: %v", tapeDir, err)
	}
	for _, tape := range tapes {
		t.Run(strings.TrimSuffix(filepath.Base(tape), ".tape"), func(t *testing.T) {
			f, err := os.Open(tape)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			events, err := readTape(f)
			if err != nil {
				t.Fatalf("%s: %v", tape, err)
			}
			for _, m := range replay(t, events) {
				t.Errorf("%s:%s", tape, m)
			}
		})
	}
}

// maxMismatches stops a replay: past a few, state has diverged and the rest
// only repeats it.
const maxMismatches = 10

// replay plays events against fresh rlstores, one per server the tape
// names, and returns where a reply differed from the recorded one.
func replay(t testing.TB, events []event) []string {
	servers := map[string]*replayServer{}
	conns := map[int]*respConn{}
	serverOf := map[int]*replayServer{}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		for _, s := range servers {
			s.ctl.Close()
		}
	}()
	var bad []string
	for _, e := range events {
		switch e.kind {
		case "open":
			s, err := replayServerFor(t, servers, e.server)
			if err == nil {
				conns[e.conn], err = dialRESP(s.addr)
			}
			if err != nil {
				return append(bad, fmt.Sprintf("%d: open %d: %v", e.line, e.conn, err))
			}
			serverOf[e.conn] = s
		case "close":
			if c := conns[e.conn]; c != nil {
				c.Close()
				delete(conns, e.conn)
			}
		default:
			if m := replayRequest(conns[e.conn], serverOf[e.conn], e); m != "" {
				if bad = append(bad, m); len(bad) == maxMismatches {
					return append(bad, "(stopped: too many mismatches)")
				}
			}
		}
	}
	return bad
}

type replayServer struct {
	addr string
	ctl  *respConn
}

func replayServerFor(t testing.TB, servers map[string]*replayServer, name string) (*replayServer, error) {
	if s := servers[name]; s != nil {
		return s, nil
	}
	addr, err := startTapServer(t, name)
	if err != nil {
		return nil, err
	}
	ctl, err := controlConn(addr, tapServers[name].pass) // first, as the tap's was
	if err != nil {
		return nil, err
	}
	servers[name] = &replayServer{addr: addr, ctl: ctl}
	return servers[name], nil
}

// replayRequest sends e's request at e's instant and returns "" if the
// reply matches the recorded one, or what differed.
func replayRequest(c *respConn, s *replayServer, e event) string {
	where := fmt.Sprintf("%d: conn %d: %s", e.line, e.conn, joinTokens(e.args))
	if c == nil {
		return where + ": the connection is not open"
	}
	if err := s.ctl.setClock(e.at); err != nil {
		return where + ": " + err.Error()
	}
	got, err := c.do(e.args...)
	if err != nil {
		got = []byte{} // the server closed the connection, as the tape says when its reply is empty
	}
	want, got := normalise(e.args, e.reply), normalise(e.args, got)
	if bytes.Equal(want, got) {
		return ""
	}
	return fmt.Sprintf("%s\n\twant %s\n\tgot  %s", where, replyTokens(want), replyTokens(got))
}

// normalise returns the part of a reply to args that a replay compares.
// Everything is compared byte for byte, times included (the replay sets the
// clock), except:
//
//   - INFO: only its redis_version and loading fields, the ones the clients
//     on the tapes read (ioredis's ready check); the rest describes the
//     process (uptime, memory, CPU, ports, run_id, counters of connections
//     and commands), which a replay's rlstore cannot repeat.
func normalise(args [][]byte, reply []byte) []byte {
	if len(args) == 0 || !strings.EqualFold(string(args[0]), "info") || !bytes.HasPrefix(reply, []byte("$")) {
		return reply
	}
	var kept []string
	for _, line := range strings.Split(string(reply), "\r\n") {
		if strings.HasPrefix(line, "redis_version:") || strings.HasPrefix(line, "loading:") {
			kept = append(kept, line)
		}
	}
	body := strings.Join(kept, "\r\n")
	return []byte("$" + strconv.Itoa(len(body)) + "\r\n" + body + "\r\n")
}
