package observe

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/server/internal/core"
)

func TestMonitorLineQuotesAndHides(t *testing.T) {
	at := time.Unix(1700000000, 123456789)
	args := [][]byte{[]byte("hello"), []byte("3"), []byte("AUTH"), []byte("u"), []byte("p\x01\"\n")}
	assert.Equal(t, `+1700000000.123456 [0 1.2.3.4:5] "hello" "3" "AUTH" "(redacted)" "(redacted)"`+"\r\n",
		string(MonitorLine(at, "1.2.3.4:5", args, core.Hidden{From: 3, To: 5})))
	assert.Equal(t, `+1700000000.123456 [0 a] "hello" "3" "AUTH" "u" "p\x01\"\n"`+"\r\n",
		string(MonitorLine(at, "a", args, core.Hidden{})))
}

func TestSlowlogKeepsWhatRedisKeeps(t *testing.T) {
	var sl Slowlog
	sl.MaxLen.Store(2)
	many := make([][]byte, 40)
	for i := range many {
		many[i] = []byte("a")
	}
	many[1] = []byte(strings.Repeat("x", 130))
	sl.Add([][]byte{[]byte("AUTH"), []byte("pw")}, true, time.Millisecond, "addr", "name")
	sl.Add(many, false, 2*time.Millisecond, "addr", "")
	sl.Add([][]byte{[]byte("PING")}, false, 3*time.Millisecond, "addr", "")
	es := sl.Entries(-1)
	assert.Len(t, es, 2, "slowlog-max-len")
	assert.Equal(t, []string{"PING"}, es[0].Args)
	assert.Len(t, es[1].Args, 32)
	assert.Equal(t, strings.Repeat("x", 128)+"... (2 more bytes)", es[1].Args[1])
	assert.Equal(t, "... (9 more arguments)", es[1].Args[31])
	assert.Equal(t, []string{"AUTH", "(redacted)"}, slowArgs([][]byte{[]byte("AUTH"), []byte("pw")}, true))
	assert.Equal(t, int64(2), es[0].ID)
}

func TestSlowlogThresholds(t *testing.T) {
	var sl Slowlog
	sl.SlowerThan.Store(-1)
	assert.False(t, sl.Slow(time.Hour), "-1 logs nothing")
	sl.SlowerThan.Store(int64(time.Millisecond))
	assert.False(t, sl.Slow(time.Millisecond-1))
	assert.True(t, sl.Slow(time.Millisecond))
	assert.False(t, sl.Spiked(time.Second), "the latency monitor is off at 0")
	sl.LatencyMs.Store(100)
	assert.False(t, sl.Spiked(99*time.Millisecond))
	assert.True(t, sl.Spiked(100*time.Millisecond))
	sl.AddSpike(time.Second)
	sl.AddSpike(200 * time.Millisecond)
	assert.Equal(t, Spike{At: sl.Latest().At, LatestMs: 200, MaxMs: 1000}, sl.Latest())
	assert.Equal(t, 1, sl.ResetLatency())
	assert.Equal(t, 0, sl.ResetLatency())
}
