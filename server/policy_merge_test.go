package server

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPolicyMergeKeepsNewest: gossip merges run each on a goroutine of its
// own (asyncState), in no order. A merge that took v2 and is held before it
// applies it, while v3 is taken and applied, must not then write v2 over
// v3: RL.POLICY GET answers v3's definition, and so does a merge of v3
// again. A local RL.POLICY SET made while an older remote version waits
// wins the same way.
func TestPolicyMergeKeepsNewest(t *testing.T) {
	nodes := startTestCluster(t, 1, clusterOpts{secret: []byte("k")})
	s := nodes[0].srv
	rdb := newClient(t, nodes[0].addr, 2)
	ctx := context.Background()
	msg := func(at int64, limit string) []byte {
		b, err := json.Marshal([]map[string]any{{"n": "api", "v": at, "o": "peer", "d": "SLIDE " + limit + " 60"}}) // route's policyVersion
		require.NoError(t, err)
		return b
	}
	get := func() string {
		def, err := rdb.Do(ctx, "RL.POLICY", "GET", "api").StringSlice()
		require.NoError(t, err)
		return strings.Join(def, " ")
	}

	// held makes the merge of version at wait, once it has taken it, until
	// the test lets it go.
	held := func(at int64) (taken, release chan struct{}) {
		taken, release = make(chan struct{}), make(chan struct{})
		s.rt.OnTaken(func(_ string, v int64) {
			if v == at {
				close(taken)
				<-release
			}
		})
		return taken, release
	}
	merge := func(b []byte) <-chan struct{} {
		done := make(chan struct{})
		go func() { defer close(done); s.Merge(b) }()
		return done
	}

	taken, release := held(2)
	v2 := merge(msg(2, "2"))
	<-taken
	<-merge(msg(3, "3")) // v3 is taken and applied while v2 waits to be applied
	require.Equal(t, "SLIDE 3 60", get(), "v3 merged")
	close(release)
	<-v2
	assert.Equal(t, "SLIDE 3 60", get(), "v2, taken before v3 and applied after it, overwrote v3")
	s.Merge(msg(3, "3"))
	assert.Equal(t, "SLIDE 3 60", get(), "after v3 again")

	// A local change, newer than every remote version, while an older one waits.
	taken, release = held(4)
	v4 := merge(msg(4, "4"))
	<-taken
	require.NoError(t, rdb.Do(ctx, "RL.POLICY", "SET", "api", "SLIDE", "9", "60").Err())
	close(release)
	<-v4
	assert.Equal(t, "SLIDE 9 60", get(), "a peer's older version, applied after a local SET, overwrote it")
}
