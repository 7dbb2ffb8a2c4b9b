package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstArgs finds what the parser finds, or nothing: never another length.
func TestFirstArgsAgreesWithParser(t *testing.T) {
	reqs := []string{
		resp("RL.SLIDE", "user:1", "100", "60"),
		resp("rl.token", "", "10", "1", "1s", "COST", "2"),
		resp("CL.THROTTLE", "k\r\nx", "15", "1", "60"),
		resp("PING", "x"),
		"*2\r\n$8\r\nRL.SLIDE\r\n$3\r\nabc\r\n",
		"*1\r\n$4\r\nPING\r\n",
		"PING\r\n",
		"*3\r\n$8\r\nRL.SLIDE\r\n$3\r\nab",
		"*3\r\n$-1\r\n",
		"*99999999999\r\n",
		"*2\r\n$3\r\nabc\r\n$2\r\nxyz\r\n",
	}
	for _, r := range reqs {
		for cut := 0; cut <= len(r); cut++ {
			b := []byte(r[:cut] + resp("PING"))
			name, key, n := firstArgs(b)
			if n == 0 {
				continue
			}
			var p parser
			p.max = DefaultMaxRequestBytes
			m, err := p.next(b)
			require.NoError(t, err, "%q", b)
			require.Equal(t, m, n, "%q", b)
			args := p.args(b, nil)
			assert.Equal(t, string(args[0]), string(name))
			assert.Equal(t, string(args[1]), string(key))
		}
	}
}

// A request another node forwarded is prefetched by the key of the
// command it wraps.
func TestFirstArgsOfForwardedRequest(t *testing.T) {
	r := resp("RL.HOP", "1", "2", "RL.SLIDE", "user:1", "100", "60")
	name, key, n := firstArgs([]byte(r + resp("PING")))
	assert.Equal(t, "RL.SLIDE", string(name))
	assert.Equal(t, "user:1", string(key))
	assert.Equal(t, len(r), n)
	name, key, _ = firstArgs([]byte(resp("rl.hop", "1", "2", "PING")))
	assert.Equal(t, "rl.hop", string(name))
	assert.Equal(t, "1", string(key))
}

func TestKeyedDecision(t *testing.T) {
	for _, name := range []string{"RL.SLIDE", "rl.token", "Rl.Fixed", "RL.LOG", "rl.leaky", "CL.THROTTLE"} {
		assert.True(t, keyedDecision([]byte(name)), name)
	}
	for _, name := range []string{"RL.CHECK", "RL.POLICY", "PING", "GET", "rl.slid", "cl.throttlex"} {
		assert.False(t, keyedDecision([]byte(name)), name)
	}
}

// A pipeline of decisions, some cut across reads, gets the replies it gets
// without prefetching: prefetchBatch reads ahead only what is whole.
func TestPipelinedDecisionsWithPrefetch(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	var b strings.Builder
	for i := range 40 {
		b.WriteString(resp("RL.SLIDE", "pf:"+strings.Repeat("k", i%5), "3", "60"))
	}
	all := b.String()
	c.send(t, all[:len(all)/3])
	c.send(t, all[len(all)/3:])
	for i := range 40 {
		require.Equal(t, "*5", c.line(t))
		allowed := c.line(t)
		assert.Equal(t, map[bool]string{true: ":1", false: ":0"}[i/5 < 3], allowed, "request %d", i)
		for range 4 {
			c.line(t)
		}
	}
}
