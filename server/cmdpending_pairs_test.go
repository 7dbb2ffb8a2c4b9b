package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A connection holds the runs of several commands until its batch ends
// (pendCmds): in a pipeline that alternates pairs and mixes in more
// commands than it holds, INFO later in the pipeline and /metrics after
// the replies still see every run counted once.
func TestPipelinedPairsCountsShow(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	var batch strings.Builder
	for i := range 5 {
		id := "id" + strconv.Itoa(i)
		batch.WriteString(respCmd("RL.ACQUIRE", "pend:lease", "10", "30s", "ID", id))
		batch.WriteString(respCmd("RL.RELEASE", "pend:lease", id))
	}
	others := [][]string{{"RL.SLIDE", "10", "60"}, {"RL.FIXED", "10", "60"}, {"RL.TOKEN", "10", "10", "1s"},
		{"RL.LEAKY", "10", "10", "1s"}, {"RL.LOG", "10", "60"}}
	for _, o := range others {
		batch.WriteString(respCmd(append([]string{o[0], "pend:" + o[0]}, o[1:]...)...))
		batch.WriteString(respCmd("PING"))
	}
	batch.WriteString(respCmd("INFO", "commandstats"))
	c.send(t, batch.String())
	for range 5 {
		c.skipReply(t)
		assert.Equal(t, ":1", c.line(t), "the release found its lease")
	}
	for range others {
		c.skipReply(t)
		assert.Equal(t, "+PONG", c.line(t))
	}
	info := c.bulk(t)
	for name, want := range map[string]string{"rl.acquire": "5", "rl.release": "5", "ping": "5", "rl.slide": "1", "rl.log": "1"} {
		assert.Contains(t, info, "cmdstat_"+name+":calls="+want+",", "INFO, later in the pipeline, sees the runs before it")
	}

	m := scrape(s)
	for name, want := range map[string]string{"rl.acquire": "5", "rl.release": "5", "ping": "5", "rl.token": "1", "rl.leaky": "1", "info": "1"} {
		assert.Equal(t, want, metricValue(m, `rlstore_commands_total{command="`+name+`"}`), name)
		assert.Equal(t, want, metricValue(m, `rlstore_command_duration_seconds_count{command="`+name+`"}`), name)
	}
	assert.Equal(t, "5", metricValue(m, `rlstore_settlements_total{command="rl.release",result="live"}`))
}

// skipReply reads one whole reply.
func (c *rawConn) skipReply(t *testing.T) {
	l := c.line(t)
	switch {
	case strings.HasPrefix(l, "*"):
		n, _ := strconv.Atoi(l[1:])
		for range n {
			c.skipReply(t)
		}
	case strings.HasPrefix(l, "$") && l != "$-1":
		c.line(t)
	}
}
