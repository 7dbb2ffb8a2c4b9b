package server

import (
	"io"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/decide"

	"github.com/rlstore/rlstore/window"
	"github.com/tidwall/redcon"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hello3 switches a raw connection to RESP3 and reads HELLO's map away.
func hello3(t *testing.T, c *rawConn) {
	t.Helper()
	c.send(t, respCmd("HELLO", "3"))
	h := c.line(t)
	require.Equal(t, "%8", h)
	for range 16 {
		readFrame(t, c)
	}
}

// readFrame reads one RESP2 or RESP3 frame and returns it flattened as text,
// aggregates as [a b c], pushes as >[a b c], nulls as nil.
func readFrame(t *testing.T, c *rawConn) string {
	t.Helper()
	h := c.line(t)
	switch h[0] {
	case '+', '-', ':':
		return h[1:]
	case '_':
		return "nil"
	case '$':
		if h == "$-1" {
			return "nil"
		}
		return c.bulkAfter(t, h)
	case '*', '>', '%':
		n := 0
		for _, d := range h[1:] {
			n = n*10 + int(d-'0')
		}
		if h[0] == '%' {
			n *= 2
		}
		out := ""
		if h[0] == '>' {
			out = ">"
		}
		out += "["
		for i := range n {
			if i > 0 {
				out += " "
			}
			out += readFrame(t, c)
		}
		return out + "]"
	}
	t.Fatalf("unexpected frame %q", h)
	return ""
}

// bulkAfter reads the body of a bulk string whose header h was read.
func (c *rawConn) bulkAfter(t *testing.T, h string) string {
	t.Helper()
	n := 0
	for _, d := range h[1:] {
		n = n*10 + int(d-'0')
	}
	buf := make([]byte, n+2)
	_, err := io.ReadFull(c.r, buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// call sends args and returns the next frame.
func (c *rawConn) call(t *testing.T, args ...string) string {
	t.Helper()
	c.send(t, respCmd(args...))
	return readFrame(t, c)
}

func TestTrackingInvalidatesAReadKeyOnChange(t *testing.T) {
	_, addr := startServer(t, Config{})
	reader, writer := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, reader)
	require.Equal(t, "OK", reader.call(t, "CLIENT", "TRACKING", "ON"))
	require.Equal(t, "0", reader.call(t, "EXISTS", "k"))
	require.Contains(t, writer.call(t, "RL.SLIDE", "k", "10", "60"), "[1 10 9 0 ")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))

	// One-shot: the key is tracked again only once it is read again.
	writer.call(t, "RL.SLIDE", "k", "10", "60")
	require.Equal(t, "slide", reader.call(t, "TYPE", "k"))
	writer.call(t, "DEL", "k")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
	require.Equal(t, "PONG", reader.call(t, "PING"), "no second invalidation was queued")
}

func TestTrackingBcastPrefixNoloop(t *testing.T) {
	_, addr := startServer(t, Config{})
	b := dialRaw(t, addr)
	hello3(t, b)
	require.Equal(t, "OK", b.call(t, "CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a:", "PREFIX", "b:", "NOLOOP"))
	assert.Equal(t, "[flags [on bcast noloop] redirect 0 prefixes [a: b:]]", b.call(t, "CLIENT", "TRACKINGINFO"))
	w := dialRaw(t, addr)
	w.call(t, "RL.SLIDE", "c:1", "5", "60") // no prefix of b's
	w.call(t, "RL.SLIDE", "b:1", "5", "60")
	assert.Equal(t, ">[invalidate [b:1]]", readFrame(t, b), "broadcast without a read first")
	b.call(t, "RL.SLIDE", "a:1", "5", "60") // NOLOOP: its own change is not announced to it
	w.call(t, "RL.SLIDE", "a:2", "5", "60", "PEEK")
	w.call(t, "DEL", "a:3")
	assert.Equal(t, ">[invalidate [a:3]]", readFrame(t, b), "neither its own change nor a PEEK was announced")
	assert.Contains(t, b.call(t, "CLIENT", "LIST", "ID", b.call(t, "CLIENT", "ID")), "flags=tB ")
	assert.Equal(t, "-ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.",
		"-"+b.call(t, "CLIENT", "TRACKING", "ON"))
}

// TestTrackingOptinNeedsCaching follows rueidis's read: CLIENT CACHING YES,
// then MULTI, PTTL, the read and EXEC. Only keys read after CACHING YES are
// tracked, and the flag lasts the whole EXEC.
func TestTrackingOptinNeedsCaching(t *testing.T) {
	_, addr := startServer(t, Config{})
	r, w := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, r)
	require.Equal(t, "OK", r.call(t, "CLIENT", "TRACKING", "ON", "OPTIN"))
	r.call(t, "EXISTS", "untracked")
	require.Equal(t, "OK", r.call(t, "CLIENT", "CACHING", "YES"))
	require.Equal(t, "OK", r.call(t, "MULTI"))
	require.Equal(t, "QUEUED", r.call(t, "PTTL", "t1"))
	require.Equal(t, "QUEUED", r.call(t, "TYPE", "t2"))
	require.Equal(t, "[-2 none]", r.call(t, "EXEC"))
	w.call(t, "DEL", "untracked")
	w.call(t, "RL.SLIDE", "t2", "5", "60")
	assert.Equal(t, ">[invalidate [t2]]", readFrame(t, r), "only keys read after CACHING YES")
	w.call(t, "RL.SLIDE", "t1", "5", "60")
	assert.Equal(t, ">[invalidate [t1]]", readFrame(t, r))
	assert.Equal(t, "-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.", "-ERR "+r.call(t, "CLIENT", "CACHING", "NO")[4:])
}

// TestTrackingRedirectRESP2 is tracking as a RESP2 client does it: a second
// connection subscribes to __redis__:invalidate and the first redirects to it.
func TestTrackingRedirectRESP2(t *testing.T) {
	_, addr := startServer(t, Config{})
	sub, r, w := dialRaw(t, addr), dialRaw(t, addr), dialRaw(t, addr)
	subID := sub.call(t, "CLIENT", "ID")
	require.Equal(t, "[subscribe __redis__:invalidate 1]", sub.call(t, "SUBSCRIBE", "__redis__:invalidate"))
	require.Equal(t, "OK", r.call(t, "CLIENT", "TRACKING", "ON", "REDIRECT", subID))
	assert.Equal(t, subID, r.call(t, "CLIENT", "GETREDIR"))
	require.Equal(t, "0", r.call(t, "EXISTS", "k"))
	w.call(t, "RL.TOKEN", "k", "5", "1", "1s")
	assert.Equal(t, "[message __redis__:invalidate [k]]", readFrame(t, sub))
	r.call(t, "TTL", "k")
	w.call(t, "FLUSHALL")
	assert.Equal(t, "[message __redis__:invalidate nil]", readFrame(t, sub), "FLUSHALL invalidates every key")
	assert.Equal(t, "ERR The client ID you want redirect to does not exist", "ERR "+r.call(t, "CLIENT", "TRACKING", "ON", "REDIRECT", "99999")[4:])
}

// TestTrackingInvalidatesOnExpiry reads a key whose state expires within a
// second and waits for the invalidation nobody's command caused.
func TestTrackingInvalidatesOnExpiry(t *testing.T) {
	_, addr := startServer(t, Config{})
	r, w := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, r)
	require.Equal(t, "OK", r.call(t, "CLIENT", "TRACKING", "ON"))
	w.call(t, "RL.FIXED", "short", "5", "300ms")
	require.Equal(t, "fixed", r.call(t, "TYPE", "short"))
	assert.Equal(t, ">[invalidate [short]]", readFrame(t, r))
	assert.Equal(t, "none", r.call(t, "TYPE", "short"))
}

// TestTrackingOffClosesTheGate checks that once every tracking client has
// turned tracking off or gone, commands skip the hooks again.
func TestTrackingOffClosesTheGate(t *testing.T) {
	s, addr := startServer(t, Config{})
	a, b := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, a)
	require.Equal(t, "OK", a.call(t, "CLIENT", "TRACKING", "ON"))
	require.Equal(t, "OK", b.call(t, "CLIENT", "TRACKING", "ON", "OPTOUT"))
	require.Equal(t, "OK", b.call(t, "MONITOR"))
	assert.Equal(t, 3, s.obs.Count())
	require.Equal(t, "OK", a.call(t, "CLIENT", "TRACKING", "OFF"))
	assert.Equal(t, "[flags [off] redirect -1 prefixes []]", a.call(t, "CLIENT", "TRACKINGINFO"))
	assert.Equal(t, "-1", a.call(t, "CLIENT", "GETREDIR"))
	require.NoError(t, b.Close())
	eventually(t, "the gate to close", func() bool { return s.obs.Count() == 0 })
}

func TestMonitorRedactsAuth(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "pw"})
	m, c := dialRaw(t, addr), dialRaw(t, addr)
	require.Equal(t, "OK", m.call(t, "AUTH", "pw"))
	require.Equal(t, "OK", m.call(t, "MONITOR"))
	require.Equal(t, "OK", c.call(t, "AUTH", "default", "pw"))
	c.call(t, "HELLO", "2", "AUTH", "default", "pw", "SETNAME", "x")
	c.call(t, "RL.SLIDE", "k\n\"", "5", "60")
	c.call(t, "CONFIG", "GET", "port") // administrative: not shown, as in Redis 7
	c.call(t, "PING")
	var lines []string
	for range 4 {
		l := m.line(t)
		_, rest, ok := strings.Cut(l, " [0 ")
		require.True(t, ok, l)
		require.Regexp(t, `^\+\d+\.\d{6}$`, l[:len(l)-len(rest)-4])
		_, cmd, _ := strings.Cut(rest, "] ")
		lines = append(lines, cmd)
	}
	assert.Equal(t, []string{
		`"AUTH" "(redacted)" "(redacted)"`,
		`"HELLO" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"`,
		`"RL.SLIDE" "k\n\"" "5" "60"`,
		`"PING"`,
	}, lines)
}

// BenchmarkSeamTracking measures RL.SLIDE through the decision seam with
// nobody tracking (one atomic load) and with some client tracking, so that
// every decision looks its key up in the tracking table.
func BenchmarkSeamTracking(b *testing.B) {
	for _, tracking := range []bool{false, true} {
		b.Run(map[bool]string{false: "nobody", true: "someone"}[tracking], func(b *testing.B) {
			s := newTestServer(b, Config{})
			if tracking {
				tc := &client{}
				tc.Out = redcon.NewWriter(io.Discard)
				s.obs.Open(&tc.ob, &tc.Session, nil, 1, "")
				s.table.Lookup("client|tracking").Run(&tc.Session, byteArgs("CLIENT", "TRACKING", "ON"))
			}
			args := byteArgs("RL.SLIDE", "s", "1000000", "60")
			parse, c := decide.NativeParser(window.KindSlide), &decide.Conn{}
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				key, r, err := parse(s.dec, c, args)
				if err != nil {
					b.Fatal(err)
				}
				r.Now = t0 + int64(i)
				if _, err := s.dec.Decide(key, &r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
