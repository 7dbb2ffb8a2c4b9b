package server

import (
	"testing"

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
	reader.send(t, resp("EXISTS", "k")+resp("RL.SLIDE", "other", "10", "60"))
	<-d.entered // the reader's batch ran; its replies wait for the commit
	writer.send(t, resp("RL.SLIDE", "k", "10", "60"))
	<-d.entered // the writer's decision ran and invalidated k for the reader

	var rc *client
	s.mu.Lock()
	for _, c := range s.clients {
		if c.trackConf.Load() != nil {
			rc = c
		}
	}
	s.mu.Unlock()
	require.NotNil(t, rc)
	var buf [256]byte
	n := 0
	eventually(t, "the invalidation, held or sent", func() bool {
		rc.pushes.mu.Lock()
		held := len(rc.pushes.buf) > 0 && !rc.pushes.writing
		rc.pushes.mu.Unlock()
		if !held {
			m, _ := readNow(reader.Conn, buf[n:])
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
