package wire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// parseAll feeds b to a parser step bytes at a time (all at once if step is
// 0), as reads would bring it in, and returns every request's arguments.
func parseAll(p *Parser, b string, step int) (cmds [][]string, idle bool, err error) {
	return parseAllBy(p, b, step, false)
}

// parseAllBy is parseAll, reading each request with NextArgs if nextArgs
// is set, else with Next and then Args.
func parseAllBy(p *Parser, b string, step int, nextArgs bool) (cmds [][]string, idle bool, err error) {
	if step == 0 {
		step = max(len(b), 1)
	}
	buf := []byte{}
	for fed := 0; fed < len(b) || len(buf) > 0; {
		k := min(step, len(b)-fed)
		buf = append(buf, b[fed:fed+k]...)
		fed += k
		var n int
		var got [][]byte
		if nextArgs {
			n, got, err = p.NextArgs(buf, [][]byte{[]byte("before")}, 1<<30)
			if err == nil && (len(got) == 0 || string(got[0]) != "before") {
				panic("NextArgs lost what dst held")
			}
			got = got[1:]
		} else {
			n, err = p.Next(buf)
		}
		if err != nil {
			return cmds, false, err
		}
		if n == 0 {
			if k == 0 {
				break // nothing more to feed
			}
			continue
		}
		if !nextArgs {
			got = p.Args(buf[:n], nil)
		}
		var args []string
		for _, a := range got {
			if buf[0] == '*' && cap(a) != len(a) { // redcon makes an inline line's own
				panic("an argument's capacity reaches past it")
			}
			args = append(args, string(a))
		}
		if len(args) > 0 {
			cmds = append(cmds, args)
		}
		buf = append([]byte{}, buf[n:]...) // the buffer moves, as the connection's may
	}
	return cmds, p.Idle() && len(buf) == 0, nil
}

func TestParserAcceptsWellFramedRequests(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want [][]string
		idle bool
	}{
		{"one command", respCmd("PING"), [][]string{{"PING"}}, true},
		{"a pipeline", respCmd("PING") + respCmd("ECHO", "hi") + respCmd("RL.SLIDE", "k", "10", "60"),
			[][]string{{"PING"}, {"ECHO", "hi"}, {"RL.SLIDE", "k", "10", "60"}}, true},
		{"an empty bulk string", respCmd("ECHO", ""), [][]string{{"ECHO", ""}}, true},
		{"binary in a bulk string", respCmd("ECHO", "\r\n*$\x00\xff"), [][]string{{"ECHO", "\r\n*$\x00\xff"}}, true},
		{"a partial command", respCmd("PING") + "*2\r\n$4\r\nECHO\r\n$5\r\nhe", [][]string{{"PING"}}, false},
		{"an inline command", "PING\r\n", [][]string{{"PING"}}, true},
		{"an inline command with LF only", "PING\n", [][]string{{"PING"}}, true},
		{"an empty inline line", "\r\n", nil, true},
		{"inline with quotes", "ECHO \"x\\ty\" 'a b'\r\n", [][]string{{"ECHO", "x\ty", "a b"}}, true},
		{"inline then RESP", "PING\r\n" + respCmd("PING"), [][]string{{"PING"}, {"PING"}}, true},
		{"a request of exactly max bytes", respCmd("ECHO", strings.Repeat("x", 978)), [][]string{{"ECHO", strings.Repeat("x", 978)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.LessOrEqual(t, len(tt.in), 1000)
			for _, step := range []int{0, 1, 3} {
				for _, nextArgs := range []bool{false, true} {
					got, idle, err := parseAllBy(&Parser{Max: 1000}, tt.in, step, nextArgs)
					require.NoError(t, err, "step %d, NextArgs %v", step, nextArgs)
					assert.Equal(t, tt.want, got, "step %d, NextArgs %v", step, nextArgs)
					assert.Equal(t, tt.idle, idle, "idle after it, step %d, NextArgs %v", step, nextArgs)
				}
			}
		})
	}
}

func TestParserRefusesBadFraming(t *testing.T) {
	tests := []struct{ name, in, err string }{
		{"an oversized bulk header", "*1\r\n$999999999999\r\n", "invalid bulk length"},
		{"an oversized array header", "*999999999999\r\n", "invalid multibulk length"},
		{"an array that cannot fit", "*200\r\n", "invalid multibulk length"},
		{"a bulk that cannot fit in the rest", "*2\r\n$990\r\n", "request is larger than max-request-bytes"},
		{"an empty array", "*0\r\n", "invalid multibulk length"},
		{"a negative array", "*-1\r\n", "invalid multibulk length"},
		{"a negative bulk", "*1\r\n$-1\r\n", "invalid bulk length"},
		{"a leading zero", "*1\r\n$04\r\nPING\r\n", "invalid bulk length"},
		{"a plus sign", "*+1\r\n", "invalid multibulk length"},
		{"no digits", "*\r\n", "invalid multibulk length"},
		{"LF without CR", "*1\n", "invalid multibulk length"},
		{"a simple string for a bulk", "*1\r\n+PING\r\n", "expected '$', got '+'"},
		{"a control byte for a bulk", "*1\r\n\x01", "expected '$', got ' '"},
		{"a bulk longer than it said", "*1\r\n$4\r\nPINGG\r\n", "invalid bulk length"},
		{"an inline line too long", strings.Repeat("a", MaxInline+1), "too big inline request"},
		{"unbalanced quotes inline", "ECHO \"abc\r\n", "unbalanced quotes in request"},
		{"garbage after a command", respCmd("PING") + "*1\r\n$x", "invalid bulk length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, step := range []int{0, 1} {
				for _, nextArgs := range []bool{false, true} {
					_, _, err := parseAllBy(&Parser{Max: 1000}, tt.in, step, nextArgs)
					require.Error(t, err, "step %d, NextArgs %v", step, nextArgs)
					assert.Equal(t, "Protocol error: "+tt.err, err.Error(), "step %d, NextArgs %v", step, nextArgs)
				}
			}
		})
	}
}

// TestParserCapsBeforeAuth checks Redis's caps on a client that has not
// authenticated: at most 10 arguments, none over 16 KiB.
func TestParserCapsBeforeAuth(t *testing.T) {
	eleven := make([]string, 11)
	for i := range eleven {
		eleven[i] = "a"
	}
	tests := []struct{ name, in, err string }{
		{"eleven arguments", respCmd(eleven...), "Protocol error: unauthenticated multibulk length"},
		{"a bulk over 16 KiB", respCmd("AUTH", strings.Repeat("p", 16<<10+1)), "Protocol error: unauthenticated bulk length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := parseAll(&Parser{Max: 1 << 20, PreAuth: true}, tt.in, 0)
			assert.EqualError(t, err, tt.err)
			_, _, err = parseAll(&Parser{Max: 1 << 20}, tt.in, 0)
			assert.NoError(t, err, "allowed once authenticated")
		})
	}
	_, _, err := parseAll(&Parser{Max: 1 << 20, PreAuth: true}, respCmd(eleven[:10]...)+respCmd("AUTH", strings.Repeat("p", 16<<10)), 0)
	assert.NoError(t, err, "10 arguments and 16 KiB are allowed")
}

// TestParserCapsEveryRequest checks that no request of more than max bytes
// gets through, however it is made up, and that one of exactly max does.
func TestParserCapsEveryRequest(t *testing.T) {
	const max = 4096
	big := make([]string, 100)
	for i := range big {
		big[i] = strings.Repeat("v", 50)
	}
	req := respCmd(big...)
	require.Greater(t, len(req), max)
	_, _, err := parseAll(&Parser{Max: max}, req, 7)
	require.Error(t, err)
	got, _, err := parseAll(&Parser{Max: int64(len(req))}, req, 7)
	assert.NoError(t, err, "a request of exactly max bytes")
	assert.Len(t, got, 1)
}

// TestNextArgsLeavesLongRequests checks that NextArgs leaves a request of
// more than maxArgs arguments unread, whole or not, with dst as it was,
// and that Next then reads it from its start; and that a request it
// leaves because it has not all arrived is read on when the rest comes.
func TestNextArgsLeavesLongRequests(t *testing.T) {
	long := respCmd("RL.SLIDE", "k", "10", "60") + respCmd("PING")
	for _, whole := range []bool{true, false} {
		in := long
		if !whole {
			in = long[:len(long)-3]
		}
		var p Parser
		p.Max = 1000
		dst := [][]byte{[]byte("x")}
		n, got, err := p.NextArgs([]byte(in), dst, 3)
		require.NoError(t, err)
		assert.Zero(t, n, "whole %v", whole)
		assert.Equal(t, dst, got, "whole %v", whole)
		if whole {
			assert.True(t, p.Idle(), "stands before it")
			n, err = p.Next([]byte(in))
			require.NoError(t, err)
			assert.Equal(t, len(respCmd("RL.SLIDE", "k", "10", "60")), n)
			assert.Equal(t, 4, p.NumArgs())
			p.Skip()
		}
	}
	var p Parser
	p.Max = 1000
	in := []byte(respCmd("ECHO", strings.Repeat("x", 200)))
	for cut := 1; cut < len(in); cut += 37 {
		p.Restart()
		n, _, err := p.NextArgs(in[:cut], nil, 8)
		require.NoError(t, err)
		require.Zero(t, n, "cut at %d", cut)
		n, args, err := p.NextArgs(append([]byte(nil), in...), nil, 8) // the buffer moved
		require.NoError(t, err)
		require.Equal(t, len(in), n, "cut at %d", cut)
		require.Equal(t, []string{"ECHO", strings.Repeat("x", 200)}, []string{string(args[0]), string(args[1])})
	}
}

// FuzzFraming checks the parser against redcon's: every request the parser
// delimits and accepts, fed a byte at a time, redcon parses as the same
// arguments with nothing left over.
func FuzzFraming(f *testing.F) {
	for _, s := range []string{respCmd("PING"), respCmd("ECHO", "a\r\nb"), "PING a b\r\n", "*1\r\n$0\r\n\r\n", "\n\n", "*2\r\n$1\r\na\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p := Parser{Max: 1 << 20}
		start := 0
		for i := range b {
			n, err := p.Next(b[start : i+1])
			if err != nil {
				return
			}
			if n == 0 {
				continue
			}
			require.Equal(t, i+1-start, n, "a request ends where its last byte arrived")
			req := b[start : i+1]
			checkRedconAgrees(t, req, p.Args(req, nil))
			start = i + 1
		}
		checkStepsAgree(t, string(b))
	})
}

// checkStepsAgree checks that the parser reads b alike whether it arrives
// whole, a byte at a time or in pieces of 3 or 7: the same requests, the
// same error, for a small and a large request cap, before and after
// authentication.
func checkStepsAgree(t *testing.T, b string) {
	for _, max := range []int64{40, 1 << 20} {
		for _, preAuth := range []bool{false, true} {
			want, _, wantErr := parseAll(&Parser{Max: max, PreAuth: preAuth}, b, 0)
			for _, step := range []int{0, 1, 3, 7} {
				for _, nextArgs := range []bool{false, true} {
					got, _, err := parseAllBy(&Parser{Max: max, PreAuth: preAuth}, b, step, nextArgs)
					require.Equal(t, want, got, "%q by %d, max %d, NextArgs %v", b, step, max, nextArgs)
					require.Equal(t, wantErr, err, "%q by %d, max %d, NextArgs %v", b, step, max, nextArgs)
				}
			}
		}
	}
}

// checkRedconAgrees checks redcon reads req as args.
func checkRedconAgrees(t *testing.T, req []byte, args [][]byte) {
	cmd, err := redcon.Parse(req)
	if req[0] != '*' && len(args) == 0 {
		return // a blank inline line, which redcon refuses and the server skips
	}
	require.NoError(t, err, "redcon on %q", req)
	require.Equal(t, len(cmd.Args), len(args), "arguments of %q", req)
	for i := range args {
		assert.Equal(t, string(cmd.Args[i]), string(args[i]), "argument %d of %q", i, req)
	}
}

// respCmd is the RESP array of bulk strings a client sends for args.
func respCmd(args ...string) string {
	b := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		b += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return b
}
