package integrations

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTapeRoundTrip: a tape reads back as written, byte for byte, for
// binary arguments and every reply shape.
func TestTapeRoundTrip(t *testing.T) {
	events := []event{
		{kind: "open", conn: 1, server: "main"},
		{kind: "req", conn: 1, at: 1764273000123456789, args: [][]byte{[]byte("RL.LOG"), []byte("a key\r\n\"\\\x00\xff"), []byte("")}, reply: []byte("*2\r\n:1\r\n$-1\r\n")},
		{kind: "req", conn: 1, at: 1764273000123456790, args: [][]byte{[]byte("INFO")}, reply: []byte("$30\r\nredis_version:7.0.0\r\nloading:0\r\n")},
		{kind: "req", conn: 1, at: 1764273000123456791, args: [][]byte{[]byte("X")}, reply: []byte("-ERR unknown command 'X'\r\n")},
		{kind: "req", conn: 1, at: 1764273000123456792, args: [][]byte{[]byte("QUIT")}, reply: []byte{}},
		{kind: "close", conn: 1},
	}
	var b bytes.Buffer
	require.NoError(t, writeTape(&b, []string{"a header"}, events))
	got, err := readTape(strings.NewReader(b.String()))
	require.NoError(t, err, b.String())
	require.Len(t, got, len(events))
	for i := range events {
		got[i].line = 0
		assert.Equal(t, events[i], got[i], "event %d of\n%s", i, b.String())
	}
}

// TestTapRecordsAndReplays records a session through the tap, replays it
// against a fresh rlstore (every reply the same, times included), and then
// replays it with one recorded reply changed, as a changed rlstore would
// answer: the replay must say where.
func TestTapRecordsAndReplays(t *testing.T) {
	rec := &recorder{}
	addr, err := startTapServer(t, "main")
	require.NoError(t, err)
	tp := startTap(t, rec, "main", addr)
	c, err := dialRESP(tp.Addr())
	require.NoError(t, err)
	send := func(args ...string) string {
		var bs [][]byte
		for _, a := range args {
			bs = append(bs, []byte(a))
		}
		reply, err := c.do(bs...)
		require.NoError(t, err)
		return string(reply)
	}
	for i := 0; i < 3; i++ {
		send("RL.LOG", "k", "2", "1500ms")
	}
	send("PTTL", "k")
	send("INFO")
	assert.Equal(t, "+OK\r\n", send("QUIT"))
	c.Close()
	require.Eventually(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return len(rec.events) > 0 && rec.events[len(rec.events)-1].kind == "close"
	}, replyWait, time.Millisecond, "the tap records the close")
	events := append([]event(nil), rec.events...)
	require.Len(t, events, 8)
	assert.Empty(t, replay(t, events), "the tape against a fresh rlstore")

	broken := append([]event(nil), events...)
	broken[3].reply = bytes.Replace(broken[3].reply, []byte(":0\r\n"), []byte(":1\r\n"), 1) // the third RL.LOG, denied, as if admitted
	broken[3].line = 4
	bad := replay(t, broken)
	require.Len(t, bad, 1)
	assert.Contains(t, bad[0], "4: conn 1: RL.LOG k 2 1500ms")
}
