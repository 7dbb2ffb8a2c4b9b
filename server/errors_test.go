package server

import (
	"testing"

	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecErrorWordings walks every error (docs/commands.md, Errors) over go-redis, in both
// protocols, each worded exactly as Redis words it.
func TestSpecErrorWordings(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		store, err := shard.New(shard.Config{MaxKeys: 1})
		require.NoError(t, err)
		_, addr := startServer(t, Config{Store: store, RequirePass: "pw"})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)
		assert.EqualError(t, c.Ping(ctx).Err(), "NOAUTH Authentication required.")
		assert.EqualError(t, c.Do(ctx, "AUTH", "nope").Err(), "WRONGPASS invalid username-password pair or user is disabled.")
		require.NoError(t, c.Do(ctx, "AUTH", "pw").Err())
		require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", "5", "60").Err())
		for _, tt := range []struct {
			args []any
			want string
		}{
			{[]any{"x", "a", "b"}, "ERR unknown command 'x', with args beginning with: 'a' 'b' "},
			{[]any{"RL.SLIDE", "k"}, "ERR wrong number of arguments for 'rl.slide' command"},
			{[]any{"SELECT", "1x"}, "ERR value is not an integer or out of range"},
			{[]any{"AUTH", "a", "b", "c"}, "ERR syntax error"},
			{[]any{"RL.SLIDE", "new", "5", "60"}, "OOM command not allowed when used memory > 'maxmemory'."},
			{[]any{"RL.TOKEN", "k", "5", "1", "1"}, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		} {
			assert.EqualError(t, c.Do(ctx, tt.args...).Err(), tt.want, "%v", tt.args)
		}
	})
}
