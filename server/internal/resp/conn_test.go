package resp

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The arguments of a request parsed ahead are the connection's own slice
// of aheadArgs, capped at its end: a command that appends to its arguments
// leaves the next request's as they were, and AheadArg and Current see the
// same arguments Command returns.
func TestAheadArgsStayEachRequests(t *testing.T) {
	rc := NewConn(&Guard{}, 1<<10, 0, nil)
	rc.Feed([]byte(respCmd("SET", "a", "1") + respCmd("GET", "b") + respCmd("PING")))
	rc.ParseAhead(16)
	require.Equal(t, 3, rc.Ahead())
	assert.Equal(t, "b", string(rc.AheadArg(1, 1)))
	var got []string
	for n := 0; ; n++ {
		args, err := rc.Command()
		require.NoError(t, err)
		if args == nil {
			break
		}
		i, cur := rc.Current()
		assert.Equal(t, n, i)
		assert.Equal(t, args, cur)
		assert.Equal(t, len(args), cap(args))
		for _, a := range args {
			got = append(got, string(a))
		}
		_ = append(args, []byte("appended"))
		args[0] = []byte("changed")
	}
	assert.Equal(t, []string{"SET", "a", "1", "GET", "b", "PING"}, got)
}

// respCmd is the RESP array of bulk strings a client sends for args.
func respCmd(args ...string) string {
	b := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		b += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return b
}

// A read that makes room in the buffer while requests parsed ahead have
// not all run (the server does not, but nothing else stops it) moves the
// bytes under their arguments: the connection forgets them and parses them
// again, so each still runs with its own arguments, whether or not a
// partial request follows them.
func TestAheadArgsSurviveACompaction(t *testing.T) {
	big := respCmd("SET", strings.Repeat("z", 7500), "1")
	for _, tc := range []struct {
		name        string
		first, rest string
	}{
		{"whole requests ahead", "", big},
		{"partial request after them", big[:40], big[40:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := NewConn(&Guard{}, 1<<20, 0, nil)
			pad := respCmd("SET", strings.Repeat("p", 7400), "1") // the next requests end near the buffer's end
			in := pad + respCmd("GET", "aaaa") + respCmd("GET", "bbbb") + tc.first
			require.Equal(t, len(in), rc.Feed([]byte(in)))
			args, err := rc.Command()
			require.NoError(t, err)
			require.Equal(t, "SET", string(args[0]))
			rc.ParseAhead(16)
			require.Equal(t, 2, rc.Ahead())
			require.Equal(t, len(tc.rest), rc.Feed([]byte(tc.rest))) // Room compacts: the read lands where the GETs were
			var got []string
			for {
				args, err := rc.Command()
				require.NoError(t, err)
				if args == nil {
					break
				}
				got = append(got, string(args[0])+" "+string(args[1][:min(len(args[1]), 4)])+" "+strconv.Itoa(len(args[1])))
			}
			assert.Equal(t, []string{"GET aaaa 4", "GET bbbb 4", "SET zzzz 7500"}, got)
		})
	}
}

// Requests read in random pieces, some large enough to make the buffer
// compact or grow, and run with ParseAhead and Command interleaved at
// random (ParseAhead only once those parsed ahead have run, as the server
// calls it), each run with the arguments it was sent: a read that moves
// the buffer under requests parsed ahead does not change them.
func TestAheadArgsRandomReads(t *testing.T) {
	for seed := range int64(100) {
		rng := rand.New(rand.NewPCG(uint64(seed), 1))
		var stream []byte
		var want [][]string
		for range 200 {
			args := make([]string, 1+rng.IntN(5))
			if rng.IntN(30) == 0 {
				args = make([]string, MaxAheadArgs+1+rng.IntN(8)) // parsed when it runs
			}
			for i := range args {
				n := rng.IntN(40)
				if rng.IntN(8) == 0 {
					n = rng.IntN(6000)
				}
				args[i] = strings.Repeat(string(rune('a'+rng.IntN(26))), n)
			}
			want = append(want, args)
			stream = append(stream, respCmd(args...)...)
		}
		rc := NewConn(&Guard{}, 1<<20, 0, nil)
		var got [][]string
		run := func(n int) {
			for range n {
				args, err := rc.Command()
				require.NoError(t, err, "seed %d", seed)
				if args == nil {
					return
				}
				req := make([]string, len(args))
				for i, a := range args {
					req[i] = string(a)
				}
				got = append(got, req)
			}
		}
		for len(stream) > 0 {
			n := rc.Feed(stream[:min(len(stream), 1+rng.IntN(9000))])
			stream = stream[n:]
			if rc.next == len(rc.ahead) && rng.IntN(2) == 0 {
				rc.ParseAhead(1 + rng.IntN(16))
			}
			run(rng.IntN(6))
		}
		run(len(want))
		require.Equal(t, len(want), len(got), "seed %d: requests run", seed)
		for i := range want {
			require.Equal(t, want[i], got[i], "seed %d: request %d", seed, i)
		}
	}
}
