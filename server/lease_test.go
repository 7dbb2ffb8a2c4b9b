package server

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// acquireReply is RL.ACQUIRE's reply.
type acquireReply struct {
	allowed                   int64
	id                        string
	limit                     int64
	inFlight, waitMs, resetMs int64
}

func wantAcquire(t *testing.T, c *redis.Client, args ...any) acquireReply {
	t.Helper()
	v, err := c.Do(context.Background(), append([]any{"RL.ACQUIRE"}, args...)...).Slice()
	require.NoErrorf(t, err, "%v", args)
	require.Lenf(t, v, 6, "%v", args)
	return acquireReply{v[0].(int64), v[1].(string), v[2].(int64), v[3].(int64), v[4].(int64), v[5].(int64)}
}

func TestLeaseCommands(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		ctx := ctxT(t)
		assert.Equal(t, acquireReply{1, "a", 2, 1, 0, 10000}, wantAcquire(t, c, "pool", 2, "10s", "ID", "a"))
		assert.Equal(t, acquireReply{1, "a", 2, 1, 0, 20000}, wantAcquire(t, c, "pool", 2, "20s", "ID", "a"), "a retried acquire renews, takes no second unit")
		gen := wantAcquire(t, c, "pool", 2, "5s")
		assert.Equal(t, int64(1), gen.allowed)
		assert.Len(t, gen.id, 24, "a generated id")
		assert.Equal(t, int64(2), gen.inFlight)
		assert.Equal(t, acquireReply{0, "b", 2, 2, 5000, 20000}, wantAcquire(t, c, "pool", 2, "5s", "ID", "b"), "denied until the earliest lease ends")
		assert.Equal(t, int64(-1), wantAcquire(t, c, "pool", 2, "5s", "ID", "b", "COST", 3).waitMs, "never fits")

		wantReply(t, c, "lease", "TYPE", "pool")
		assert.Equal(t, []string{"pool"}, scanAll(t, c, "type", "lease"))
		assert.Equal(t, int64(20000), wantInt(t, c, "PTTL", "pool"))
		mem, err := c.MemoryUsage(ctx, "pool").Result()
		require.NoError(t, err)
		assert.Positive(t, mem)
		info, err := c.Do(ctx, "RL.INFO", "pool").Result()
		require.NoError(t, err)
		want := map[string]any{"algorithm": "lease", "limit": int64(2), "in_flight": int64(2), "ttl_ms": int64(20000)}
		assert.Equal(t, want, infoMap(info))

		assert.Equal(t, int64(1), wantInt(t, c, "RL.RELEASE", "pool", gen.id))
		assert.Equal(t, int64(0), wantInt(t, c, "RL.RELEASE", "pool", gen.id), "a second release")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.RELEASE", "pool", "never"))
		assert.Equal(t, int64(1), wantAcquire(t, c, "pool", 2, "5s", "ID", "b").allowed)

		clk.Set(6 * time.Second) // b has expired, a lives on
		assert.Equal(t, int64(0), wantInt(t, c, "RL.RENEW", "pool", "b", "5s"), "renewing an expired lease")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.RELEASE", "pool", "b"), "releasing an expired lease")
		assert.Equal(t, int64(1), wantInt(t, c, "RL.RENEW", "pool", "a", "1s"))
		clk.Set(7 * time.Second)
		assert.Equal(t, int64(0), wantInt(t, c, "EXISTS", "pool"), "the last lease ended: no key")
		assert.Equal(t, int64(0), wantInt(t, c, "RL.RELEASE", "pool", "a"))
		wantReply(t, c, "none", "TYPE", "pool")
	})
}

func infoMap(v any) map[string]any {
	got := map[string]any{}
	switch v := v.(type) {
	case map[any]any:
		for k, val := range v {
			got[k.(string)] = val
		}
	case []any:
		for i := 0; i+1 < len(v); i += 2 {
			got[v[i].(string)] = v[i+1]
		}
	}
	return got
}

func TestLeaseErrors(t *testing.T) {
	_, c := startWithClock(t, 3)
	for _, tc := range []struct {
		want string
		args []any
	}{
		{"ERR wrong number of arguments for 'rl.acquire' command", []any{"RL.ACQUIRE", "k", 1}},
		{"ERR value is not an integer or out of range", []any{"RL.ACQUIRE", "k", "x", "1s"}},
		{"ERR limit must be between 1 and 1048575", []any{"RL.ACQUIRE", "k", 0, "1s"}},
		{"ERR limit must be between 1 and 1048575", []any{"RL.ACQUIRE", "k", 1 << 20, "1s"}},
		{"ERR ttl is not a duration or out of range", []any{"RL.ACQUIRE", "k", 1, "soon"}},
		{"ERR ttl must be between 1ms and 1d", []any{"RL.ACQUIRE", "k", 1, "2d"}},
		{"ERR cost must be between 1 and 1048575", []any{"RL.ACQUIRE", "k", 1, "1s", "COST", 0}},
		{"ERR value is not an integer or out of range", []any{"RL.ACQUIRE", "k", 1, "1s", "COST", "x"}},
		{"ERR syntax error", []any{"RL.ACQUIRE", "k", 1, "1s", "ID"}},
		{"ERR syntax error", []any{"RL.ACQUIRE", "k", 1, "1s", "PEEK", "1"}},
		{"ERR the lease id must be 1 to 256 bytes", []any{"RL.ACQUIRE", "k", 1, "1s", "ID", ""}},
		{"ERR the lease id must be 1 to 256 bytes", []any{"RL.RELEASE", "k", ""}},
		{"ERR ttl must be between 1ms and 1d", []any{"RL.RENEW", "k", "a", "0"}},
		{"ERR wrong number of arguments for 'rl.renew' command", []any{"RL.RENEW", "k", "a"}},
		{"ERR keys starting with \\xffp are reserved for policy state", []any{"RL.ACQUIRE", "\xffpx", 1, "1s"}},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", []any{"RL.ACQUIRE", "slide", 1, "1s"}},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", []any{"RL.RELEASE", "slide", "a"}},
	} {
		if tc.args[1] == "slide" {
			wantDecision(t, c, "RL.SLIDE", "slide", 5, 60)
		}
		wantErrReply(t, c, tc.want, tc.args...)
	}
	wantAcquire(t, c, "lease", 1, "1m")
	wantErrReply(t, c, "WRONGTYPE Operation against a key holding the wrong kind of value", "RL.SLIDE", "lease", 5, 60)
}

// TestLeaseTrackingInvalidates: a client caching a lease key's reads hears
// of an acquire and of a release.
func TestLeaseTrackingInvalidates(t *testing.T) {
	_, addr := startServer(t, Config{})
	reader, writer := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, reader)
	require.Equal(t, "OK", reader.call(t, "CLIENT", "TRACKING", "ON"))
	require.Equal(t, "0", reader.call(t, "EXISTS", "k"))
	require.Contains(t, writer.call(t, "RL.ACQUIRE", "k", "2", "1m", "ID", "a"), "[1 a 2 1 0 ")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
	require.Equal(t, "lease", reader.call(t, "TYPE", "k"))
	require.Equal(t, "1", writer.call(t, "RL.RELEASE", "k", "a"))
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
}

// TestLeaseAllocs: acquires (named and not) and releases allocate
// nothing on the server's whole path, parse to reply.
func TestLeaseAllocs(t *testing.T) {
	s := newTestServer(t, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	batch := []byte(respCmd("RL.ACQUIRE", "pool", "10", "1m", "ID", "w1") + respCmd("RL.RELEASE", "pool", "w1") +
		respCmd("RL.ACQUIRE", "pool2", "1000000", "1m") + respCmd("RL.RENEW", "pool", "w1", "1s"))
	runBatch(s, c, rc, batch)
	assert.Zero(t, quietAllocsPerRun(200, func() { runBatch(s, c, rc, batch) }))
}

// BenchmarkLeasePairs runs RL.ACQUIRE + RL.RELEASE pairs through the
// server's own path, 8 pairs to a batch as a client at -P 16 sends them,
// over 1000 keys with 4 leases held on each.
func BenchmarkLeasePairs(b *testing.B) {
	s := newTestServer(b, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	var batches [][]byte
	for k := range 1000 {
		key := benchKey(k)
		for h := range 4 {
			runBatch(s, c, rc, []byte(respCmd("RL.ACQUIRE", key, "100", "1h", "ID", "held"+strconv.Itoa(h))))
		}
	}
	for n := range 256 {
		var batch string
		for p := range 8 {
			key, id := benchKey((n*8+p)*7919%1000), "w"+strconv.Itoa(p)
			batch += respCmd("RL.ACQUIRE", key, "100", "30s", "ID", id) + respCmd("RL.RELEASE", key, id)
		}
		batches = append(batches, []byte(batch))
	}
	b.ReportAllocs()
	cpu := threadCPU()
	n := 0
	for b.Loop() {
		runBatch(s, c, rc, batches[n%len(batches)])
		n++
	}
	b.ReportMetric(float64(threadCPU()-cpu)/float64(8*n), "cpu-ns/pair")
}
