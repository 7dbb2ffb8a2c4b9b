package server

import (
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replyShape is the RESP type found at each place of a COMMAND DOCS or
// COMMAND INFO reply, the places named alike across commands: "doc.summary"
// is every command's and subcommand's summary, "arg.flags[]" every argument
// flag at any depth, "info[2][]" every command flag, "keyspec.flags[]"
// every key spec flag. A place that held two types holds '?'.
type replyShape map[string]byte

func (s replyShape) record(path string, kind byte) {
	if old, ok := s[path]; ok && old != kind {
		kind = '?'
	}
	s[path] = kind
}

// docs records a COMMAND DOCS reply: a map from names to docs.
func (s replyShape) docs(n respNode) {
	for i := 0; i+1 < len(n.elems); i += 2 {
		s.doc(n.elems[i+1])
	}
}

func (s replyShape) doc(n respNode) {
	s.record("doc", n.kind)
	for i := 0; i+1 < len(n.elems); i += 2 {
		k, v := n.elems[i], n.elems[i+1]
		s.record("doc.<key>", k.kind)
		switch k.str {
		case "subcommands":
			s.record("doc.subcommands", v.kind)
			for j := 0; j+1 < len(v.elems); j += 2 {
				s.record("doc.subcommands.<key>", v.elems[j].kind)
				s.doc(v.elems[j+1])
			}
		case "arguments":
			s.args("doc.arguments", v)
		default:
			s.any("doc."+k.str, v)
		}
	}
}

func (s replyShape) args(path string, n respNode) {
	s.record(path, n.kind)
	for _, a := range n.elems {
		s.record("arg", a.kind)
		for i := 0; i+1 < len(a.elems); i += 2 {
			k, v := a.elems[i], a.elems[i+1]
			s.record("arg.<key>", k.kind)
			if k.str == "arguments" {
				s.args("arg.arguments", v)
			} else {
				s.any("arg."+k.str, v)
			}
		}
	}
}

// info records a COMMAND INFO or COMMAND reply: an array of descriptions.
func (s replyShape) info(n respNode) {
	for _, e := range n.elems {
		if !e.null {
			s.command(e)
		}
	}
}

func (s replyShape) command(n respNode) {
	s.record("info", n.kind)
	for i, e := range n.elems {
		p := "info[" + strconv.Itoa(i) + "]"
		switch i {
		case 8:
			s.record(p, e.kind)
			for _, spec := range e.elems {
				s.any("keyspec", spec)
			}
		case 9:
			s.record(p, e.kind)
			for _, sub := range e.elems {
				s.command(sub)
			}
		default:
			s.any(p, e)
		}
	}
}

// any records n and what it holds: a map's values under their keys, an
// array's or set's elements under [].
func (s replyShape) any(path string, n respNode) {
	s.record(path, n.kind)
	if n.kind == '%' {
		for i := 0; i+1 < len(n.elems); i += 2 {
			s.record(path+".<key>", n.elems[i].kind)
			s.any(path+"."+n.elems[i].str, n.elems[i+1])
		}
		return
	}
	for _, e := range n.elems {
		s.any(path+"[]", e)
	}
}

// TestCommandReplyTypesMatchRedis compares the RESP types of every COMMAND
// DOCS and COMMAND INFO reply, for every command, with the types redis-server
// 7 uses in the same places (testdata/redis7): redis-cli 7.0 asserts some of
// them and aborts when they differ, as it did when argument flags were bulk
// strings. RESP3 shows the maps and sets; RESP2 must be what Redis sends a
// RESP2 client for the same reply.
func TestCommandReplyTypesMatchRedis(t *testing.T) {
	_, addr := startServer(t, Config{})
	want := replyShape{}
	want.docs(redis7Golden(t, "command-docs", 3))
	want.info(redis7Golden(t, "command-info", 3))
	for _, q := range []string{"command-docs", "command-info"} {
		// Redis lists subcommands in its hash table's order, which differs
		// between the two recordings: compare the nodes, not their order.
		require.Equal(t, redis7Golden(t, q, 3).resp2().sortedNodes(), redis7Golden(t, q, 2).sortedNodes(),
			"Redis's RESP2 %s is not its RESP3 flattened as resp2 assumes", q)
	}

	replies := map[string][]string{"docs": {"COMMAND", "DOCS"}, "info": {"COMMAND", "INFO"}, "command": {"COMMAND"}}
	got := map[int]map[string]respNode{}
	for _, proto := range []int{2, 3} {
		conn := dialRaw(t, addr)
		rawCall(t, conn, "HELLO", strconv.Itoa(proto))
		got[proto] = map[string]respNode{}
		for what, args := range replies {
			got[proto][what] = parseRESP(t, rawCall(t, conn, args...))
		}
	}
	have := replyShape{}
	have.docs(got[3]["docs"])
	have.info(got[3]["info"])
	have.info(got[3]["command"])
	var places []string
	for p := range have {
		places = append(places, p)
	}
	sort.Strings(places)
	for _, p := range places {
		w, ok := want[p]
		if !assert.Truef(t, ok, "rlstore's replies have %s, which Redis's never do", p) {
			continue
		}
		assert.Equalf(t, string(w), string(have[p]), "the RESP type of %s", p)
	}
	for what := range replies {
		assert.Empty(t, firstDiff(got[3][what].resp2(), got[2][what], what), "RESP2 is not RESP3 flattened as Redis flattens it")
	}
}

// TestRedisCLIInteractive runs redis-cli 7 as a user does, in a terminal,
// over RESP2 and with -3 over RESP3:
// it reads COMMAND DOCS at start (and aborted on bulk-string flags), shows
// RL.SLIDE's arguments as a hint while it is typed, and runs it.
func TestRedisCLIInteractive(t *testing.T) {
	for _, args := range [][]string{nil, {"-3"}} {
		_, addr := startServer(t, Config{})
		cli := startTTYCLI(t, addr, args...)
		cli.typeText("RL.SLIDE ")
		cli.waitFor(addr + "> RL.SLIDE key limit window [COST cost] [PEEK]")
		cli.enter("user:1 5 10")
		out := cli.waitScreen("RL.SLIDE to finish", func(s string) bool { return strings.HasSuffix(s, "\n"+addr+">") })
		out = out[strings.Index(out, "RL.SLIDE user:1 5 10\n")+len("RL.SLIDE user:1 5 10\n"):]
		assert.Equal(t, "1) (integer) 1\n2) (integer) 5\n3) (integer) 4\n4) (integer) 0\n", out[:strings.LastIndex(out, "5)")], "redis-cli %v", args)
	}
}

// TestRedisCLIPipedInput: redis-cli reading commands from a pipe reads
// COMMAND DOCS first too, and then runs every line.
func TestRedisCLIPipedInput(t *testing.T) {
	_, addr := startServer(t, Config{})
	var in strings.Builder
	for i := range 1000 {
		in.WriteString("ECHO " + strconv.Itoa(i) + "\n")
	}
	out := redisCLI(t, addr, in.String())
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 1000, "%.300s", out)
	for i, l := range lines {
		require.Equal(t, strconv.Itoa(i), l)
	}
}
