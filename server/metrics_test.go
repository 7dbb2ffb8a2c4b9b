package server

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape returns s's /metrics text.
func scrape(s *Server) string {
	var b bytes.Buffer
	s.WriteMetrics(&b)
	return b.String()
}

// metricLine returns the value of the sample named exactly name, or "".
func metricValue(text, name string) string {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return v
		}
	}
	return ""
}

func TestMetricsCountDecisionsPerCommandAndPolicy(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	for range 3 {
		require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 2, 10).Err())
	}
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 2, 10, "PEEK").Err()) // peeks are not counted
	require.NoError(t, c.Do(ctx, "CL.THROTTLE", "t", 0, 1, 60).Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "login", "FIXED", 1, 60, "SLIDE", 5, 60).Err())
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "trial", "FIXED", 1, 60, "SHADOW").Err())
	for range 2 {
		require.NoError(t, c.Do(ctx, "RL.CHECK", "login", "u1").Err())
		require.NoError(t, c.Do(ctx, "RL.CHECK", "trial", "u1").Err())
	}
	m := scrape(s)
	assert.Equal(t, "2", metricValue(m, `rlstore_decisions_total{command="rl.slide",result="allowed"}`), m)
	assert.Equal(t, "1", metricValue(m, `rlstore_decisions_total{command="rl.slide",result="denied"}`))
	assert.Equal(t, "1", metricValue(m, `rlstore_decisions_total{command="cl.throttle",result="allowed"}`))
	assert.Equal(t, "2", metricValue(m, `rlstore_decisions_total{command="rl.check",result="denied"}`), "shadow denials count as denials")
	assert.Equal(t, "1", metricValue(m, `rlstore_policy_decisions_total{policy="login",result="denied"}`))
	assert.Equal(t, "1", metricValue(m, `rlstore_policy_rule_denied_total{policy="login",rule="0"}`))
	assert.Equal(t, "0", metricValue(m, `rlstore_policy_rule_denied_total{policy="login",rule="1"}`))
	assert.Equal(t, "1", metricValue(m, `rlstore_policy_shadow_denied_total{policy="trial"}`))
	assert.Equal(t, "0", metricValue(m, `rlstore_policy_shadow_denied_total{policy="login"}`))
	assert.Equal(t, "1", metricValue(m, `rlstore_shadow_denied_total`))
	assert.Equal(t, "4", metricValue(m, `rlstore_commands_total{command="rl.slide"}`))
	assert.Equal(t, "4", metricValue(m, `rlstore_command_duration_seconds_count{command="rl.slide"}`))
	assert.Equal(t, "4", metricValue(m, `rlstore_command_duration_seconds_bucket{command="rl.slide",le="+Inf"}`))
	assert.Equal(t, "5", metricValue(m, "rlstore_keys"), "k, t and a key per policy rule")
	assert.NotContains(t, m, "u1", "no series is labelled by key")
	assert.Contains(t, m, "go_goroutines", "Go runtime metrics are there too")

	require.NoError(t, c.Do(ctx, "RL.POLICY", "DEL", "trial").Err())
	assert.NotContains(t, scrape(s), `policy="trial"`, "a deleted policy's series go")
}

func TestInfoCommandStats(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "pw"})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "AUTH", "pw").Err())
	require.NoError(t, c.Do(ctx, "RL.TOKEN", "k", 5, 1, 1).Err())
	assert.Error(t, c.Do(ctx, "RL.SLIDE", "k", 5, 1).Err(), "WRONGTYPE: a failed call")
	assert.Error(t, c.Do(ctx, "RL.SLIDE", "k").Err(), "arity: a rejected call")
	info := c.Info(ctx, "commandstats").Val()
	assert.Contains(t, info, "# Commandstats")
	assert.Regexp(t, `cmdstat_rl\.slide:calls=1,usec=\d+,usec_per_call=\d+\.\d\d,rejected_calls=1,failed_calls=1\r\n`, info)
	assert.Regexp(t, `cmdstat_rl\.token:calls=1,usec=\d+,usec_per_call=[\d.]+,rejected_calls=0,failed_calls=0`, info)
	assert.Regexp(t, `cmdstat_auth:calls=1,`, info)
	assert.NotContains(t, c.Info(ctx).Val(), "cmdstat_", "not a default section, as in Redis")
	assert.Contains(t, c.Info(ctx, "everything").Val(), "cmdstat_rl.token")
	lat := c.Info(ctx, "latencystats").Val()
	assert.Regexp(t, `latency_percentiles_usec_rl\.token:p50=[\d.]+,p99=[\d.]+,p99\.9=[\d.]+`, lat)
}

func TestSlowlog(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "s3cret"})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "AUTH", "s3cret").Err())
	assert.Equal(t, map[string]string{"slowlog-log-slower-than": "10000"}, c.ConfigGet(ctx, "slowlog-log-slower-than").Val())
	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "0").Err())
	require.NoError(t, c.Do(ctx, "AUTH", "s3cret").Err())
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "slow:key", 5, 10).Err())
	n, err := c.Do(ctx, "SLOWLOG", "LEN").Int64()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, int64(3))
	got, err := c.Do(ctx, "SLOWLOG", "GET", 2).Slice()
	require.NoError(t, err)
	require.Len(t, got, 2)
	e := got[0].([]any)
	require.Len(t, e, 6)
	assert.Equal(t, []any{"SLOWLOG", "LEN"}, e[3])
	assert.Equal(t, []any{"RL.SLIDE", "slow:key", "5", "10"}, got[1].([]any)[3])
	all, err := c.Do(ctx, "SLOWLOG", "GET", -1).Slice()
	require.NoError(t, err)
	for _, x := range all {
		assert.NotContains(t, x.([]any)[3], "s3cret", "AUTH's password is never logged")
	}
	require.NoError(t, c.ConfigSet(ctx, "slowlog-log-slower-than", "-1").Err())
	require.NoError(t, c.Do(ctx, "SLOWLOG", "RESET").Err())
	n, _ = c.Do(ctx, "SLOWLOG", "LEN").Int64()
	assert.Zero(t, n)
}

func TestLatencyLatest(t *testing.T) {
	slow := command{name: "test.slow", arity: 1, run: func(s *Server, c *client, _ [][]byte) {
		time.Sleep(3 * time.Millisecond) // the command under test is slow; nothing is being ordered
		c.conn.WriteString("OK")
	}}
	_, addr := startServerCmds(t, Config{}, slow)
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	v, err := c.Do(ctx, "LATENCY", "LATEST").Slice()
	require.NoError(t, err)
	assert.Empty(t, v, "the monitor is off by default, as in Redis")
	require.NoError(t, c.ConfigSet(ctx, "latency-monitor-threshold", "1").Err())
	require.NoError(t, c.Do(ctx, "test.slow").Err())
	v, err = c.Do(ctx, "LATENCY", "LATEST").Slice()
	require.NoError(t, err)
	require.Len(t, v, 1)
	e := v[0].([]any)
	assert.Equal(t, "command", e[0])
	assert.GreaterOrEqual(t, e[2].(int64), int64(3))
	assert.GreaterOrEqual(t, e[3].(int64), e[2].(int64))
}

// TestRanAllocatesNothing guards dispatch's per-command accounting: timing,
// the counters and the slow-log check allocate nothing for a fast command.
func TestRanAllocatesNothing(t *testing.T) {
	s, _ := startServer(t, Config{})
	cm := s.table.Find([]byte("rl.slide"))
	c := &client{}
	args := [][]byte{[]byte("RL.SLIDE"), []byte("k"), []byte("1"), []byte("1")}
	// Each run starts now: a start taken once would make every run past the
	// first 10 ms slow (a SLOWLOG entry, which allocates) on a loaded host.
	assert.Zero(t, testing.AllocsPerRun(1000, func() { s.ran(c, cm, args, s.monotonic(), 0) }))
	// Counting the decision: decide's TestCountAllocatesNothing.
}

func TestClusterMetricsAndReadiness(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k")})
	ctx := ctxT(t)
	var key string
	for i := 0; key == ""; i++ { // a key the first node forwards
		if k := "fwd:" + strconv.Itoa(i); ownerOf(nodes, k) != nodes[0] {
			key = k
		}
	}
	require.NoError(t, newClient(t, nodes[0].addr, 2).Do(ctx, "RL.SLIDE", key, 5, 10).Err())
	m := scrape(nodes[0].srv)
	assert.Equal(t, "1", metricValue(m, "rlstore_cluster_enabled"))
	assert.Equal(t, "2", metricValue(m, "rlstore_cluster_members"))
	assert.Equal(t, "1", metricValue(m, "rlstore_cluster_forwarded_total"))
	assert.Equal(t, "1", metricValue(m, `rlstore_cluster_peer_forwarded_total{peer="`+ownerOf(nodes, key).name+`"}`))
	assert.Equal(t, "0", metricValue(m, `rlstore_cluster_peer_forward_errors_total{peer="`+ownerOf(nodes, key).name+`"}`))
	assert.NoError(t, nodes[0].srv.Ready())
	assert.Equal(t, "0", metricValue(scrape(newTestServer(t, Config{})), "rlstore_cluster_enabled"))
}
