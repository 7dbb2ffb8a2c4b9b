package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMaxKeyBytes refuses a key longer than MaxKeyBytes in every keyed
// command, and no more.
func TestMaxKeyBytes(t *testing.T) {
	_, addr := startServer(t, Config{MaxKeyBytes: 16})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	long, ok := strings.Repeat("k", 17), strings.Repeat("k", 16)
	const want = "ERR key is longer than max-key-bytes (16 bytes)"
	for _, cmd := range [][]any{
		{"RL.SLIDE", long, 5, 60},
		{"RL.TOKEN", long, 5, 1, 60},
		{"CL.THROTTLE", long, 5, 1, 60},
		{"DEL", ok, long},
		{"EXISTS", long},
		{"RL.INFO", long},
	} {
		assert.EqualError(t, c.Do(ctx, cmd...).Err(), want, "%v", cmd)
	}
	require.NoError(t, c.Do(ctx, "RL.SLIDE", ok, 5, 60).Err())
	assert.Zero(t, c.DBSize(ctx).Val()-1, "only the short key was made")
	assert.Equal(t, "16", c.ConfigGet(ctx, "max-key-bytes").Val()["max-key-bytes"])
}
