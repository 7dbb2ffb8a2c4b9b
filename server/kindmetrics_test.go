package server

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMetricsKeysByKind: /metrics counts keys and their bytes per algorithm,
// policy rules' keys under their rules' algorithms; the bytes add up to
// MEMORY USAGE over every key, the keys to rlstore_keys; DEL and FLUSHALL
// take them away.
func TestMetricsKeysByKind(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	for range 5 { // 5 entries: a Log key's entries outgrow its slot
		require.NoError(t, c.Do(ctx, "RL.LOG", "l", 10, 60).Err())
	}
	for _, cmd := range [][]any{
		{"RL.SLIDE", "s", 10, 60}, {"RL.TOKEN", "t", 10, 1, 1}, {"RL.FIXED", "f", 10, 60},
		{"RL.LEAKY", "k", 10, 1, 1}, {"CL.THROTTLE", "cell", 5, 10, 60},
	} {
		require.NoError(t, c.Do(ctx, cmd...).Err(), cmd)
	}
	m := scrape(s)
	keys, err := c.Keys(ctx, "*").Result()
	require.NoError(t, err)
	require.Len(t, keys, 6)
	var usage int64
	for _, k := range keys {
		n, err := c.MemoryUsage(ctx, k).Result()
		require.NoError(t, err, k)
		usage += n
	}
	want := map[string]string{"slide": "2", "token": "2", "fixed": "2", "log": "1", "leaky": "1"} // once a policy's rules have keys too
	var sumKeys, sumBytes int64
	for kind := range want {
		sumKeys += metricInt(t, m, `rlstore_keys_by_kind{kind="`+kind+`"}`)
		sumBytes += metricInt(t, m, `rlstore_key_bytes_by_kind{kind="`+kind+`"}`)
	}
	assert.Equal(t, metricInt(t, m, "rlstore_keys"), sumKeys, "the kinds' keys add up to rlstore_keys")
	assert.Equal(t, usage, sumBytes, "the kinds' bytes add up to MEMORY USAGE of every key")
	assert.LessOrEqual(t, sumBytes, metricInt(t, m, "rlstore_key_bytes"))

	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "login", "FIXED", 5, 60, "SLIDE", 5, 60).Err())
	require.NoError(t, c.Do(ctx, "RL.CHECK", "login", "u1").Err())
	m = scrape(s)
	for kind, n := range want {
		assert.Equal(t, n, metricValue(m, `rlstore_keys_by_kind{kind="`+kind+`"}`), kind)
	}

	require.NoError(t, c.Del(ctx, "l", "s").Err())
	m = scrape(s)
	assert.Equal(t, "0", metricValue(m, `rlstore_keys_by_kind{kind="log"}`))
	assert.Equal(t, "0", metricValue(m, `rlstore_key_bytes_by_kind{kind="log"}`))
	assert.Equal(t, "1", metricValue(m, `rlstore_keys_by_kind{kind="slide"}`))

	require.NoError(t, c.FlushAll(ctx).Err())
	m = scrape(s)
	for kind := range want {
		assert.Equal(t, "0", metricValue(m, `rlstore_keys_by_kind{kind="`+kind+`"}`), kind)
		assert.Equal(t, "0", metricValue(m, `rlstore_key_bytes_by_kind{kind="`+kind+`"}`), kind)
	}
}

func metricInt(t *testing.T, text, name string) int64 {
	t.Helper()
	v, err := strconv.ParseInt(metricValue(text, name), 10, 64)
	require.NoError(t, err, name)
	return v
}
