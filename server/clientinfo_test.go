package server

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// redis7ClientFields are the fields Redis 7.0 writes in CLIENT INFO and
// CLIENT LIST, in its order; the integer ones are those redis-py parses with int().
var redis7ClientFields = []string{"id", "addr", "laddr", "fd", "name", "age", "idle", "flags", "db",
	"sub", "psub", "ssub", "multi", "qbuf", "qbuf-free", "argv-mem", "multi-mem", "rbs", "rbp",
	"obl", "oll", "omem", "tot-mem", "events", "cmd", "user", "redir", "resp"}

var redisPyIntFields = []string{"id", "age", "idle", "db", "sub", "psub", "multi", "qbuf",
	"qbuf-free", "obl", "argv-mem", "oll", "omem", "tot-mem"}

func TestClientInfoHasEveryRedis7Field(t *testing.T) {
	_, addr := startServer(t, Config{})
	c, ctx := newClient(t, addr, 2), ctxT(t)
	for _, cmd := range [][]any{{"CLIENT", "INFO"}, {"CLIENT", "LIST"}} {
		line, err := c.Do(ctx, cmd...).Text()
		require.NoError(t, err)
		var names []string
		fields := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, "%q has no =", kv)
			names = append(names, k)
			fields[k] = v
		}
		assert.Equal(t, redis7ClientFields, names[:len(redis7ClientFields)], "%v", cmd)
		for _, k := range redisPyIntFields {
			_, err := strconv.ParseInt(fields[k], 10, 64)
			assert.NoError(t, err, "%v: %s=%q", cmd, k, fields[k])
		}
		assert.Equal(t, "10", fields["argv-mem"], "CLIENT and %s", cmd[1])
		assert.NotEqual(t, "-1", fields["fd"])
	}
}
