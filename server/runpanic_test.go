package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command that panics is still counted and timed in INFO commandstats,
// as a command that returns is (Server.run records it without a defer,
// and recoverPanic records the run that panicked).
func TestPanickedCommandCounted(t *testing.T) {
	boom := command{name: "test.panic", arity: 1, run: func(s *Server, c *client, args [][]byte) {
		panic("boom")
	}}
	_, addr := startServerCmds(t, Config{}, boom)
	c := dialRaw(t, addr)
	c.send(t, respCmd("TEST.PANIC"))
	require.True(t, strings.HasPrefix(c.line(t), "-ERR internal error running 'TEST.PANIC'"))
	info, err := newClient(t, addr, 2).Info(ctxT(t), "commandstats").Result()
	require.NoError(t, err)
	assert.Contains(t, info, "cmdstat_test.panic:calls=1,")
}
