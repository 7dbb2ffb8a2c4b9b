package server

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/require"
)

// blockingCommit is a Durability whose Commit waits for the test's release.
type blockingCommit struct {
	fakeDurability
	entered chan struct{}
	release chan struct{}
}

func (b *blockingCommit) Commit() error {
	b.entered <- struct{}{}
	<-b.release
	return nil
}

// A reply must not leave before the commit of its batch, even when the batch
// ends with a command that closes the connection (QUIT, a panic, CLIENT KILL).
func TestQuitCommitsBeforeReplies(t *testing.T) {
	d := &blockingCommit{entered: make(chan struct{}, 1), release: make(chan struct{})}
	_, addr := startServer(t, Config{Durability: d})
	c := dialRaw(t, addr)
	c.send(t, respCmd("RL.SLIDE", "k", "10", "60")+respCmd("QUIT"))
	<-d.entered
	// Commit is under way: nothing of the batch may have been sent yet. The
	// server writes to the socket synchronously, so bytes flushed before
	// Commit are already in c's receive buffer.
	var buf [64]byte
	n, _ := resp.ReadNow(c.Conn, buf[:])
	close(d.release)
	require.Zero(t, n, "replies sent before their commit: %q", buf[:n])
	require.Equal(t, "*5", c.line(t))
}
