package server

import (
	"sync"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// invalidations collects the keys a rueidis client was told to drop.
type invalidations struct {
	mu   sync.Mutex
	keys []string
}

func (v *invalidations) add(ms []rueidis.RedisMessage) {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, m := range ms {
		k, err := m.ToString()
		if err == nil {
			v.keys = append(v.keys, k)
		}
	}
}

func (v *invalidations) count(key string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, k := range v.keys {
		if k == key {
			n++
		}
	}
	return n
}

// TestTrackingBcastInvalidatesOnExpiry is the case: a RESP3 client
// in BCAST mode on prefix bx: hears of another client's RL.FIXED bx:1, and
// then of its state expiring, as a client in default mode does.
func TestTrackingBcastInvalidatesOnExpiry(t *testing.T) {
	_, addr := startServer(t, Config{})
	var got invalidations
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:           []string{addr},
		ClientTrackingOptions: []string{"BCAST", "PREFIX", "bx:"},
		OnInvalidations:       got.add,
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, c.B().Ping().Build()).Error(), "the tracking connection is up")

	w := newClient(t, addr, 2)
	require.NoError(t, w.Do(ctx, "RL.FIXED", "bx:1", 1, "2s").Err())
	require.NoError(t, w.Do(ctx, "RL.FIXED", "other:1", 1, "2s").Err())
	eventually(t, "the write's invalidation", func() bool { return got.count("bx:1") >= 1 })
	require.Equal(t, "fixed", w.Type(ctx, "bx:1").Val())

	eventually(t, "the expiry's invalidation", func() bool { return got.count("bx:1") >= 2 })
	assert.Equal(t, "none", w.Type(ctx, "bx:1").Val(), "pushed once the state expired")
	assert.Zero(t, got.count("other:1"), "a key outside the prefix is not broadcast")
}
