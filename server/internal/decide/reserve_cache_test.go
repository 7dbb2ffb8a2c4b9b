package decide

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReserveCache parses RL.RESERVE's arguments through one cache, each
// time as parsing without it would: a repeat with another id hits, and a
// change of any byte, of where the bytes split or of where the id is named
// is a miss.
func TestReserveCache(t *testing.T) {
	var pc ParamCache
	steps := []struct {
		args string
		hit  bool
	}{
		{"TOKEN 100 100 60 COST 10 TTL 30s ID a", false},
		{"TOKEN 100 100 60 COST 10 TTL 30s ID bb", true},
		{"TOKEN 100 100 60 COST 10 TTL 30s id c", true},
		{"TOKEN 100 100 60 COST 10 TTL 30s", true}, // no id: a new one is made
		{"TOKEN 100 100 60 COST 11 TTL 30s ID a", false},
		{"TOKEN 100 100 60 COST 1 1 TTL 30s ID a", false}, // split elsewhere: a syntax error
		{"TOKEN 100 100 60 COST 11 TTL 30s ID " + strings.Repeat("x", maxLeaseID+1), false},
		{"TOKEN 100 100 60 COST 11 TTL 30s ID a", true},
		{"TOKEN 100 100 60 COST 11 TTL 30s ID", false},   // the id's value missing
		{"TOKEN 100 100 60 ID a COST 11 TTL 30s", false}, // an id elsewhere: not kept
		{"TOKEN 100 100 60 ID b COST 11 TTL 30s", false},
		{"SLIDE 100 60 TTL 1s", false},
		{"SLIDE 100 60 TTL 1s ID a", true},
		{"SLIDE 100 60 TTL 0s ID a", false}, // an error: not kept
		{"SLIDE 100 60 TTL 0s ID a", false},
		{"SLIDE 100 60 TTL 1s COST " + strings.Repeat("1", 60), false}, // too long to keep
		{"SLIDE 100 60 TTL 1s COST " + strings.Repeat("1", 60), false},
	}
	for _, st := range steps {
		args := byteArgs(append([]string{"RL.RESERVE", "k"}, strings.Fields(st.args)...)...)
		var r shard.ReserveRequest
		_, hit := pc.reserve.parse(args, &r)
		assert.Equal(t, st.hit, hit, "%q", st.args)
		checkReserveParse(t, &pc, args)
	}
}

// TestReserveCacheRandom parses random RL.RESERVE arguments, drawn from few
// words so that they repeat, through one cache, each time as parsing
// without it would.
func TestReserveCacheRandom(t *testing.T) {
	words := []string{"TOKEN", "slide", "FIXED", "id", "ID", "COST", "TTL", "ttl", "1", "10", "100", "60", "1s", "30s", "0", "x", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	var pc ParamCache
	hits := 0
	for range 20000 {
		args := []string{"RL.RESERVE", "k"}
		switch rng.IntN(3) {
		case 0: // well formed, mostly
			args = append(args, "TOKEN", "100", "100", "60", "COST", words[8+rng.IntN(3)], "TTL", words[12+rng.IntN(2)])
		case 1:
			args = append(args, "SLIDE", []string{"100", "1000000000", "1000000001"}[rng.IntN(3)], words[8+rng.IntN(4)], "TTL", "1s")
		}
		for range max(rng.IntN(8)-4, 0) { // mostly none
			args = append(args, words[rng.IntN(len(words))])
		}
		if rng.IntN(2) == 0 {
			args = append(args, words[3+rng.IntN(2)], words[rng.IntN(len(words))])
		}
		if len(args) < 4 {
			continue
		}
		b := byteArgs(args...)
		if _, hit := pc.reserve.parse(b, new(shard.ReserveRequest)); hit {
			hits++
		}
		checkReserveParse(t, &pc, b)
	}
	assert.Greater(t, hits, 500, "the random requests repeat often enough to hit")
}

// checkReserveParse checks that parseReserve through pc gives what parsing
// without any cache gives.
func checkReserveParse(t *testing.T, pc *ParamCache, args [][]byte) {
	t.Helper()
	want, wantID, wantErr := parseReserveArgs(args, nil)
	var got shard.ReserveRequest
	id, err := parseReserve(args, pc, &got)
	require.Equal(t, wantErr, err, "%q", args)
	if wantErr != nil {
		return
	}
	require.Equal(t, want, got, "%q", args)
	require.Equal(t, string(wantID), string(id), "%q", args)
	require.Equal(t, wantID == nil, id == nil, "%q", args)
}

// TestArgWord checks that argWord tells apart every two arguments of one
// length up to 8 over a small alphabet, all of them up to 5 bytes and
// random ones above.
func TestArgWord(t *testing.T) {
	alphabet := []byte("a1\x00")
	rng := rand.New(rand.NewPCG(3, 4))
	for n := 0; n <= 8; n++ {
		seen := map[uint64]string{}
		count := 1
		for range n {
			count *= len(alphabet)
		}
		for i := range min(count, 4000) {
			a := make([]byte, n)
			for j, x := 0, i; j < n; j, x = j+1, x/len(alphabet) {
				a[j] = alphabet[x%len(alphabet)]
				if count > 4000 {
					a[j] = alphabet[rng.IntN(len(alphabet))]
				}
			}
			w := argWord(a)
			if other, ok := seen[w]; ok {
				require.Equal(t, other, string(a), "two arguments of %d bytes, one word", n)
			}
			seen[w] = string(a)
		}
	}
}
