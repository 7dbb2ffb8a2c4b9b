package server

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection adds its command and decision counts to the shared counters
// once a batch (pending): a command later in the same pipeline, and anyone
// who has read the batch's replies, must still see every one counted.
func TestPipelinedCountsShow(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	var batch strings.Builder
	for range 5 {
		batch.WriteString(respCmd("RL.SLIDE", "pend:k", "3", "60"))
	}
	batch.WriteString(respCmd("INFO", "commandstats"))
	c.send(t, batch.String())
	for range 5 {
		require.Equal(t, "*5", c.line(t))
		for range 5 {
			c.line(t)
		}
	}
	assert.Contains(t, c.bulk(t), "cmdstat_rl.slide:calls=5,", "INFO, later in the pipeline, sees the decisions before it")

	m := scrape(s) // the replies are read: every count is in
	assert.Equal(t, "3", metricValue(m, `rlstore_decisions_total{command="rl.slide",result="allowed"}`))
	assert.Equal(t, "2", metricValue(m, `rlstore_decisions_total{command="rl.slide",result="denied"}`))
	assert.Equal(t, "5", metricValue(m, `rlstore_command_duration_seconds_count{command="rl.slide"}`))
	assert.Equal(t, "1", metricValue(m, `rlstore_commands_total{command="info"}`))
}

// A connection that closes mid-batch still has its commands counted.
func TestClosedClientCountsShow(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	c.send(t, respCmd("RL.SLIDE", "pend:gone", "3", "60")+respCmd("RL.SLIDE", "pend:gone", "3", "60")+"*1\r\n$x\r\n")
	for range 2 {
		require.Equal(t, "*5", c.line(t))
		for range 5 {
			c.line(t)
		}
	}
	require.True(t, strings.HasPrefix(c.line(t), "-ERR Protocol error"))
	require.Eventually(t, func() bool {
		return metricValue(scrape(s), `rlstore_decisions_total{command="rl.slide",result="allowed"}`) == "2"
	}, deadline, time.Millisecond)
}
