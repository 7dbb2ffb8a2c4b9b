package server

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClientNameCaps: names and library names are at most 1 KB, and, as in
// Redis, have no spaces or newlines (issue 25's finding 5 set 200 KB ones).
func TestClientNameCaps(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := ctxT(t)
	c := newClient(t, addr, 2)
	long := strings.Repeat("n", core.MaxClientName+1)
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETNAME", long).Err(), core.ErrNameLong)
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", strings.Repeat("x", 200<<10)).Err(), core.ErrNameLong)
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-VER", long).Err(), core.ErrNameLong)
	assert.EqualError(t, c.Do(ctx, "HELLO", "2", "SETNAME", long).Err(), core.ErrNameLong)
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETNAME", "a b").Err(), core.ErrClientName)
	assert.EqualError(t, c.Do(ctx, "CLIENT", "SETNAME", "a\nb").Err(), core.ErrClientName)
	require.NoError(t, c.Do(ctx, "CLIENT", "SETNAME", long[1:]).Err(), "1024 bytes is fine")
	require.NoError(t, c.Do(ctx, "CLIENT", "SETINFO", "LIB-NAME", long[1:]).Err())
}

// TestMaxMemoryClientsClosesLargestFirst: once all clients' replies pass
// the budget, the client holding the most is closed, not the one that
// asked last, and everyone else is served.
func TestMaxMemoryClientsClosesLargestFirst(t *testing.T) {
	store := mustStore(t)
	p := window.Params{Kind: window.KindFixed, Limit: 10, Period: time.Hour}
	now := time.Now().UnixNano()
	for i := range 40000 {
		_, err := store.Decide(fmt.Appendf(nil, "a-rather-long-key-name-for-keys-%08d", i), p, now, 1, false)
		require.NoError(t, err)
	}
	s, addr := startServer(t, Config{Store: store, MaxMemoryClients: 8 << 20})
	keysReply := 40000 * (len("a-rather-long-key-name-for-keys-00000000") + 8) // about 1.9 MB
	big := dialRaw(t, addr)                                                    // never reads
	big.send(t, strings.Repeat(respCmd("KEYS", "*"), 3))
	eventually(t, "the big reader holds its replies", func() bool { return s.mem.Held() >= int64(2*keysReply) })

	small := dialRaw(t, addr)
	small.send(t, strings.Repeat(respCmd("KEYS", "*"), 2)+respCmd("PING"))
	for range 2 {
		h := small.line(t)
		require.True(t, strings.HasPrefix(h, "*40000"), "the smaller client gets its replies: %q", h[:min(len(h), 20)])
		for range 40000 * 2 {
			small.line(t)
		}
	}
	assert.Equal(t, "+PONG", small.line(t))
	assert.True(t, big.closedByServerAfterDrain(t), "the client holding the most was closed")
	assert.Equal(t, int64(1), s.mem.Evicted())
	cfg, err := newClient(t, addr, 2).ConfigGet(ctxT(t), "maxmemory-clients").Result()
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"maxmemory-clients": "8388608"}, cfg)
	other := newClient(t, addr, 2)
	require.NoError(t, other.Ping(ctxT(t)).Err())
	eventually(t, "the budget is given back", func() bool { return s.mem.Held() == 0 })
}

// closedByServerAfterDrain reads whatever c was sent, and reports whether
// the server then closed it.
func (c *rawConn) closedByServerAfterDrain(t *testing.T) bool {
	t.Helper()
	buf := make([]byte, 1<<20)
	for {
		if _, err := c.r.Read(buf); err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}
