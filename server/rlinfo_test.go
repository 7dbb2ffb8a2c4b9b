package server

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRLInfo(t *testing.T) {
	forProtocols(t, func(t *testing.T, proto int) {
		clk, c := startWithClock(t, proto)
		ctx := ctxT(t)
		cmds := map[string][]any{
			"slide": {"RL.SLIDE", "s", 5, 60, "COST", 2},
			"token": {"RL.TOKEN", "t", 5, 1, "1s", "COST", 2},
			"fixed": {"RL.FIXED", "f", 5, 60, "COST", 2},
			"log":   {"RL.LOG", "l", 5, "1s", "COST", 2},
			"leaky": {"RL.LEAKY", "q", 5, 1, "1s", "COST", 2},
		}
		for _, args := range cmds {
			require.NoError(t, c.Do(ctx, args...).Err())
		}
		clk.Set(500 * time.Millisecond)
		want := map[string]map[string]any{
			"s": {"algorithm": "slide", "limit": int64(5), "window_ms": int64(60000), "count": int64(2), "ttl_ms": int64(59500)},
			"t": {"algorithm": "token", "capacity": int64(5), "rate": int64(1), "period_ms": int64(1000), "tokens": int64(3), "ttl_ms": int64(1500)},
			"f": {"algorithm": "fixed", "limit": int64(5), "window_ms": int64(60000), "count": int64(2), "ttl_ms": int64(59500)},
			"l": {"algorithm": "log", "limit": int64(5), "window_ms": int64(1000), "count": int64(2), "ttl_ms": int64(500)},
			"q": {"algorithm": "leaky", "capacity": int64(5), "rate": int64(1), "period_ms": int64(1000), "queued": int64(2), "ttl_ms": int64(1500)},
		}
		for key, w := range want {
			v, err := c.Do(ctx, "RL.INFO", key).Result()
			require.NoError(t, err)
			got := map[string]any{}
			if proto == 3 {
				for k, val := range v.(map[any]any) {
					got[k.(string)] = val
				}
			} else {
				a := v.([]any)
				for i := 0; i < len(a); i += 2 {
					got[a[i].(string)] = a[i+1]
				}
			}
			assert.Equal(t, w, got, key)
			assert.Equal(t, w["algorithm"], c.Type(ctx, key).Val())
		}
		assert.Equal(t, redis.Nil, c.Do(ctx, "RL.INFO", "missing").Err())
		wantErrReply(t, c, "ERR wrong number of arguments for 'rl.info' command", "RL.INFO")
	})
}
