package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadTimeMarksIdle checks that the one clock read a batch takes when its
// requests arrive is what CLIENT LIST's idle= counts from.
func TestReadTimeMarksIdle(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Ping(ctx).Err())
	id, err := c.ClientID(ctx).Result()
	require.NoError(t, err)
	cl := s.clients.Get(id)
	require.NotNil(t, cl)
	before := time.Now().UnixNano()
	require.NoError(t, c.Ping(ctx).Err())
	after := time.Now().UnixNano()
	last := cl.Conn.Guard().Last.Load()
	const slack = int64(time.Millisecond) // the wall and monotonic clocks may drift apart a little
	assert.GreaterOrEqual(t, last, before-slack, "the PING's read moved last")
	assert.LessOrEqual(t, last, after+slack)
}
