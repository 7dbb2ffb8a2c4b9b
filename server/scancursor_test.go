package server

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScanCursorFloat64RoundTrip runs a full SCAN over the wire as a
// JavaScript client does, holding each cursor as a float64 between calls, on
// a store with the most shards there can be: it ends, and every key comes
// back exactly once (there is no rebuild meanwhile).
func TestScanCursorFloat64RoundTrip(t *testing.T) {
	m, err := shard.New(shard.Config{Shards: shard.MaxShards})
	require.NoError(t, err)
	_, addr := startServer(t, Config{Store: m})
	rdb := newClient(t, addr, 2)
	ctx := ctxT(t)
	const n = 2000
	for i := range n {
		require.NoError(t, rdb.Do(ctx, "RL.SLIDE", fmt.Sprintf("k%d", i), 10, 3600).Err())
	}
	seen := map[string]int{}
	cursor := float64(0)
	for calls := 0; ; calls++ {
		require.Less(t, calls, 20000, "SCAN never returned cursor 0")
		res, err := rdb.Do(ctx, "SCAN", strconv.FormatFloat(cursor, 'f', -1, 64), "COUNT", 50).Slice()
		require.NoError(t, err)
		next, err := strconv.ParseUint(res[0].(string), 10, 64)
		require.NoError(t, err)
		for _, k := range res[1].([]any) {
			seen[k.(string)]++
		}
		if next == 0 {
			break
		}
		cursor = float64(next)
		require.Equal(t, next, uint64(cursor), "cursor %d does not survive a float64", next)
	}
	require.Len(t, seen, n)
	for k, c := range seen {
		assert.Equalf(t, 1, c, "%q returned %d times", k, c)
	}
}
