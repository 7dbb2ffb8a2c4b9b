package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// frameAll scans b in chunks of size step (all of it at once if step is 0)
// and returns the requests that ended and the first error.
func frameAll(max int64, b string, step int) (ends int, n int, err error) {
	f := framer{max: max}
	if step == 0 {
		step = len(b)
	}
	for len(b) > 0 {
		k := min(step, len(b))
		m, ended, e := f.scan([]byte(b[:k]))
		n += m
		if ended {
			ends++ // counts chunks in which a request ended, which is exact when step is 1
		}
		if e != nil {
			return ends, n, e
		}
		b = b[k:]
	}
	return ends, n, nil
}

func TestFramerAcceptsWellFramedRequests(t *testing.T) {
	tests := []struct {
		name string
		in   string
		ends int // requests that end in it
		idle bool
	}{
		{"one command", resp("PING"), 1, true},
		{"a pipeline", resp("PING") + resp("ECHO", "hi") + resp("RL.SLIDE", "k", "10", "60"), 3, true},
		{"an empty bulk string", resp("ECHO", ""), 1, true},
		{"binary in a bulk string", resp("ECHO", "\r\n*$\x00\xff"), 1, true},
		{"a partial command", resp("PING") + "*2\r\n$4\r\nECHO\r\n$5\r\nhe", 1, false},
		{"an inline command", "PING\r\n", 1, true},
		{"an inline command with LF only", "PING\n", 1, true},
		{"an empty inline line", "\r\n", 1, true},
		{"inline then RESP", "PING\r\n" + resp("PING"), 2, true},
		{"a request of exactly max bytes", resp("ECHO", strings.Repeat("x", 978)), 1, true}, // 19 + len("978") + 978
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.LessOrEqual(t, len(tt.in), 1000)
			ends, n, err := frameAll(1000, tt.in, 1)
			require.NoError(t, err)
			assert.Equal(t, len(tt.in), n, "bytes passed")
			assert.Equal(t, tt.ends, ends, "requests ended")
			f := framer{max: 1000}
			_, _, _ = f.scan([]byte(tt.in))
			assert.Equal(t, tt.idle, f.idle(), "idle after it")
		})
	}
}

func TestFramerRefusesBadFraming(t *testing.T) {
	const max = 1000
	tests := []struct {
		name, in, err string
		passed        int // bytes passed on before the error
	}{
		{"an oversized bulk header", "*1\r\n$999999999999\r\n", "invalid bulk length", 8},
		{"an oversized array header", "*999999999999\r\n", "invalid multibulk length", 3},
		{"an array that cannot fit", "*200\r\n", "invalid multibulk length", 3},
		{"a bulk that cannot fit in the rest", "*2\r\n$990\r\n", "request is larger than max-request-bytes", 8},
		{"an empty array", "*0\r\n", "invalid multibulk length", 2},
		{"a negative array", "*-1\r\n", "invalid multibulk length", 1},
		{"a negative bulk", "*1\r\n$-1\r\n", "invalid bulk length", 5},
		{"a leading zero", "*1\r\n$04\r\nPING\r\n", "invalid bulk length", 6},
		{"a plus sign", "*+1\r\n", "invalid multibulk length", 1},
		{"no digits", "*\r\n", "invalid multibulk length", 1},
		{"LF without CR", "*1\n", "invalid multibulk length", 2},
		{"a simple string for a bulk", "*1\r\n+PING\r\n", "expected '$', got '+'", 4},
		{"a control byte for a bulk", "*1\r\n\x01", "expected '$', got ' '", 4},
		{"a bulk longer than it said", "*1\r\n$4\r\nPINGG\r\n", "invalid bulk length", 12},
		{"an inline line too long", strings.Repeat("a", maxInline+1), "too big inline request", 0},
		{"garbage after a command", resp("PING") + "*1\r\n$x", "invalid bulk length", 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, step := range []int{0, 1} {
				_, n, err := frameAll(max, tt.in, step)
				require.Error(t, err, "step %d", step)
				assert.Equal(t, "Protocol error: "+tt.err, err.Error(), "step %d", step)
				if step == 0 {
					assert.Equal(t, tt.passed, n, "bytes passed on")
				}
			}
		})
	}
}

// TestFramerCapsEveryRequest checks that no request of more than max bytes
// gets through, however it is made up, and that one of exactly max does.
func TestFramerCapsEveryRequest(t *testing.T) {
	const max = 4096
	big := make([]string, 100)
	for i := range big {
		big[i] = strings.Repeat("v", 50)
	}
	req := resp(big...)
	require.Greater(t, len(req), max)
	_, n, err := frameAll(max, req, 7)
	require.Error(t, err)
	assert.LessOrEqual(t, n, max)
	_, _, err = frameAll(int64(len(req)), req, 7)
	assert.NoError(t, err, "a request of exactly max bytes")
}

// FuzzFraming checks that the framer and redcon agree on where requests end:
// every request the framer delimits, redcon parses as exactly one command
// with nothing left over, and no shorter prefix of it as a command. If they
// disagreed, redcon would parse requests the framer had not counted.
func FuzzFraming(f *testing.F) {
	for _, s := range []string{resp("PING"), resp("ECHO", "a\r\nb"), "PING a b\r\n", "*1\r\n$0\r\n\r\n", "\n\n", "*2\r\n$1\r\na\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fr := framer{max: 1 << 20}
		start := 0
		for i := range b {
			_, ended, err := fr.scan(b[i : i+1])
			if err != nil {
				return
			}
			if ended {
				checkRedconAgrees(t, b[start:i+1])
				start = i + 1
			}
		}
	})
}

// checkRedconAgrees checks redcon's view of one request the framer delimited.
func checkRedconAgrees(t *testing.T, req []byte) {
	if req[0] != '*' {
		_, err := redcon.Parse(req) // inline: any outcome but a misplaced end will do
		if err != nil && strings.Contains(err.Error(), "too much data") {
			t.Fatalf("redcon found more than one request in inline %q", req)
		}
		return
	}
	_, err := redcon.Parse(req)
	require.NoError(t, err, "redcon on %q", req)
	for i := 1; i < len(req); i++ {
		if _, err := redcon.Parse(req[:i]); err == nil {
			t.Fatalf("redcon found a whole command in the prefix %q of %q", req[:i], req)
		}
	}
}
