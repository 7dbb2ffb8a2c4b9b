package server

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An invalidation must not reach a client before the reply that read the
// key, even when that reply still waits in the batch's buffer (here behind
// the batch's commit) after the read released its held pushes.
func TestInvalidationWaitsForTheBatchReplies(t *testing.T) {
	d := &blockingCommit{entered: make(chan struct{}, 2), release: make(chan struct{})}
	s, addr := startServer(t, Config{Durability: d})
	reader, writer := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, reader)
	require.Equal(t, "OK", reader.call(t, "CLIENT", "TRACKING", "ON"))
	reader.send(t, respCmd("EXISTS", "k")+respCmd("RL.SLIDE", "other", "10", "60"))
	<-d.entered // the reader's batch ran; its replies wait for the commit
	writer.send(t, respCmd("RL.SLIDE", "k", "10", "60"))
	<-d.entered // the writer's decision ran and invalidated k for the reader

	rc := trackingClient(t, s)
	var buf [256]byte
	n := 0
	eventually(t, "the invalidation, held or sent", func() bool {
		held := rc.Conn.PushesWaiting()
		if !held {
			m, _ := resp.ReadNow(reader.Conn, buf[n:])
			n += m
		}
		return held || n > 0
	})
	close(d.release)
	require.Zero(t, n, "an invalidation went out ahead of the replies: %q", buf[:n])
	assert.Equal(t, "0", readFrame(t, reader))
	assert.Contains(t, readFrame(t, reader), "[1 10 9 0 ")
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
}

// An invalidation must not reach a client before a reply that still waits
// behind an unfinished Later (a forwarded request in a cluster): the batch's
// flush only moved that reply into the outbox.
func TestInvalidationWaitsForRepliesBehindALater(t *testing.T) {
	taken := make(chan *resp.Later, 1)
	s, addr := startServerCmds(t, Config{}, laterCmd(taken))
	reader, writer := dialRaw(t, addr), dialRaw(t, addr)
	hello3(t, reader)
	require.Equal(t, "OK", reader.call(t, "CLIENT", "TRACKING", "ON"))
	reader.send(t, respCmd("TEST.LATER")+respCmd("EXISTS", "k"))
	l := <-taken
	rc := trackingClient(t, s)
	eventually(t, "the batch to end, EXISTS's reply behind the Later", func() bool {
		n, _ := rc.Conn.Boxed()
		return n == 2 && rc.Cmds.Load() == 4
	})
	writer.send(t, respCmd("RL.SLIDE", "k", "10", "60"))
	readFrame(t, writer) // the decision ran and invalidated k for the reader

	var buf [256]byte
	n := 0
	eventually(t, "the invalidation, held or sent", func() bool {
		held := rc.Conn.PushesWaiting()
		if !held {
			m, _ := resp.ReadNow(reader.Conn, buf[n:])
			n += m
		}
		return held || n > 0
	})
	require.Zero(t, n, "an invalidation went out ahead of the replies: %q", buf[:n])
	l.Finish([]byte("+later\r\n"))
	assert.Equal(t, "later", readFrame(t, reader))
	assert.Equal(t, "0", readFrame(t, reader))
	assert.Equal(t, ">[invalidate [k]]", readFrame(t, reader))
}

// trackingClient returns the one client of s that has CLIENT TRACKING on.
func trackingClient(t *testing.T, s *Server) *client {
	var tc *client
	for _, x := range s.clients.List() {
		if c := s.clientOf(x); c.ob.Redir() >= 0 { // tracking
			tc = c
		}
	}
	require.NotNil(t, tc)
	return tc
}
