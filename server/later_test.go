package server

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// laterCmd is a test command whose reply another goroutine completes: it
// sends its Later on taken, and the test finishes it.
func laterCmd(taken chan *resp.Later) command {
	return command{name: "test.later", arity: 1, run: func(s *Server, c *client, args [][]byte) {
		taken <- s.later(c)
	}}
}

// TestLaterKeepsRepliesInOrder checks a reply completed by another
// goroutine goes out in its place: the commands after it run at once, their
// replies wait for it, and other clients are served meanwhile.
func TestLaterKeepsRepliesInOrder(t *testing.T) {
	taken := make(chan *resp.Later, 2)
	s, addr := startServerCmds(t, Config{}, laterCmd(taken))
	c := dialRaw(t, addr)
	c.send(t, respCmd("TEST.LATER")+respCmd("ECHO", "after")+respCmd("TEST.LATER")+respCmd("ECHO", "last"))
	first, second := <-taken, <-taken
	eventually(t, "the commands after the Laters to run", func() bool {
		return s.clientList()[0].Cmds.Load() == 4
	})
	assertServing(t, addr)

	second.Finish([]byte("+second\r\n")) // out of order: it waits for the first
	first.Finish([]byte("+first\r\n"))
	assert.Equal(t, "+first", c.line(t))
	assert.Equal(t, "after", c.bulk(t))
	assert.Equal(t, "+second", c.line(t))
	assert.Equal(t, "last", c.bulk(t))
}

// TestLaterHoldsTheClose checks QUIT after an unfinished Later closes only
// once the Later's reply is out.
func TestLaterHoldsTheClose(t *testing.T) {
	taken := make(chan *resp.Later, 1)
	_, addr := startServerCmds(t, Config{}, laterCmd(taken))
	c := dialRaw(t, addr)
	c.send(t, respCmd("TEST.LATER")+respCmd("QUIT"))
	l := <-taken
	l.Finish([]byte(":7\r\n"))
	assert.Equal(t, ":7", c.line(t))
	assert.Equal(t, "+OK", c.line(t))
	require.True(t, c.closedByServer(t))
}

// TestLaterReusedKeepsOrder: a connection reuses the Laters it has written
// out, and replies keep their order round after round of reuse.
func TestLaterReusedKeepsOrder(t *testing.T) {
	taken := make(chan *resp.Later, 2)
	_, addr := startServerCmds(t, Config{}, laterCmd(taken))
	c := dialRaw(t, addr)
	seen := map[*resp.Later]bool{}
	reused := false
	for i := range 20 {
		c.send(t, respCmd("TEST.LATER")+respCmd("ECHO", "mid")+respCmd("TEST.LATER"))
		first, second := <-taken, <-taken
		for _, l := range []*resp.Later{first, second} {
			reused = reused || seen[l]
			seen[l] = true
		}
		second.Finish([]byte(":2\r\n"))
		first.Finish([]byte(":1\r\n"))
		assert.Equal(t, ":1", c.line(t), "round %d", i)
		assert.Equal(t, "mid", c.bulk(t), "round %d", i)
		assert.Equal(t, ":2", c.line(t), "round %d", i)
	}
	assert.True(t, reused, "a Later written out is taken again")
}

// TestLaterLargeReplyNeverWaits: Finish with a reply larger than the
// client's socket holds returns before the client reads anything (the
// socket takes what it can, a goroutine writes the rest), and the client
// then gets every byte, in order, and the replies after it.
func TestLaterLargeReplyNeverWaits(t *testing.T) {
	taken := make(chan *resp.Later, 1)
	_, addr := startServerCmds(t, Config{}, laterCmd(taken))
	c := dialRaw(t, addr)
	c.send(t, respCmd("TEST.LATER")+respCmd("ECHO", "after"))
	l := <-taken
	big := strings.Repeat("x", 16<<20)
	finished := make(chan struct{})
	go func() {
		l.Finish([]byte("$" + strconv.Itoa(len(big)) + "\r\n" + big + "\r\n"))
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(10 * time.Second):
		t.Fatal("Finish waited for a client that was not reading")
	}
	assert.True(t, c.bulk(t) == big, "the large reply arrived whole")
	assert.Equal(t, "after", c.bulk(t))
	assertServing(t, addr)
}
