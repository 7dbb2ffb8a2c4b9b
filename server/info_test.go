package server

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// infoField returns the value of field in an INFO reply, or "" if it has none.
func infoField(info, field string) string {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(field) + `:(.*)\r$`).FindStringSubmatch(info)
	if m == nil {
		return ""
	}
	return m[1]
}

func TestInfoSections(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		_, addr := startServer(t, Config{Version: "0.9.0"})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		all := c.Info(ctx).Val()
		for _, sec := range []string{"# Server", "# Clients", "# Memory", "# Persistence", "# Stats", "# Keyspace"} {
			assert.Contains(t, all, sec+"\r\n")
		}
		assert.Equal(t, "7.0.0", infoField(all, "redis_version"), "clients read redis_version")
		assert.Equal(t, "0.9.0", infoField(all, "rl_version"))
		_, port, _ := strings.Cut(addr, ":")
		assert.Equal(t, port, infoField(all, "tcp_port"))
		assert.Equal(t, "1", infoField(all, "connected_clients"))
		assert.Equal(t, "10000", infoField(all, "maxclients"))

		server := c.Info(ctx, "SERVER").Val()
		assert.Contains(t, server, "# Server")
		assert.NotContains(t, server, "# Clients")
		two := c.Info(ctx, "clients", "stats").Val()
		assert.Contains(t, two, "# Clients")
		assert.Contains(t, two, "# Stats")
		assert.NotContains(t, two, "# Memory")
		for _, every := range []string{"all", "everything", "default"} {
			assert.Contains(t, c.Info(ctx, every).Val(), "# Keyspace", every)
		}
		assert.Empty(t, c.Info(ctx, "nosuch").Val())
	})
}

func TestInfoCountsWhatHappens(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	assert.NotContains(t, c.Info(ctx, "keyspace").Val(), "db0", "an empty keyspace shows no db0, as in Redis")

	for range 3 {
		require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", "2", "60").Err())
	}
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k2", "2", "60").Err())
	assert.Regexp(t, `^keys=2,expires=2,avg_ttl=([1-5]\d{4}|60000)$`, infoField(c.Info(ctx, "keyspace").Val(), "db0"), "avg_ttl: the mean ms to expiry of 60 s windows")

	stats := c.Info(ctx, "stats").Val()
	assert.Equal(t, "3", infoField(stats, "rl_allowed"))
	assert.Equal(t, "1", infoField(stats, "rl_denied"))
	before := atoi(t, infoField(stats, "total_commands_processed"))
	for range 5 {
		require.NoError(t, c.Ping(ctx).Err())
	}
	after := atoi(t, infoField(c.Info(ctx, "stats").Val(), "total_commands_processed"))
	assert.Equal(t, before+6, after, "five PINGs and an INFO")
	assert.GreaterOrEqual(t, atoi(t, infoField(stats, "total_connections_received")), 1)

	mem := c.Info(ctx, "memory").Val()
	assert.Positive(t, atoi(t, infoField(mem, "used_memory")))
	assert.Positive(t, atoi(t, infoField(mem, "used_memory_rss")), "read from /proc/self/statm")
	assert.Positive(t, atoi(t, infoField(mem, "used_memory_dataset")), "two keys take room")
	assert.Regexp(t, `^\d+\.\d\dM$`, infoField(mem, "used_memory_rss_human"))
}

func TestInfoCountsCommandsOfClientsGone(t *testing.T) {
	_, addr := startServer(t, Config{})
	gone := dialRaw(t, addr)
	gone.send(t, respCmd("PING")+respCmd("PING")+respCmd("QUIT"))
	for range 3 {
		gone.line(t)
	}
	require.True(t, gone.closedByServer(t))
	c := newClient(t, addr, 2)
	eventually(t, "the client to be gone", func() bool {
		return infoField(c.Info(ctxT(t), "clients").Val(), "connected_clients") == "1"
	})
	total := atoi(t, infoField(c.Info(ctxT(t), "stats").Val(), "total_commands_processed"))
	assert.GreaterOrEqual(t, total, 3+2, "the gone client's three, and this one's")
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1536: "1.50K", 5 << 20: "5.00M", 3 << 30: "3.00G"} {
		assert.Equal(t, want, humanBytes(n))
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	require.NoError(t, err, "%q", s)
	return n
}
