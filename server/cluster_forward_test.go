package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForwardedBatchesRunInOrder: a client that writes its next requests
// before the replies to the previous ones come back still has them run
// at the owner in the order it sent them. Each key allows one request, so
// a request run out of order would be admitted where its earlier twin is
// denied.
func TestForwardedBatchesRunInOrder(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k")})
	_, theirs := keysByOwner(nodes, 100)
	c := dialRaw(t, nodes[0].addr)
	for _, key := range theirs {
		for range 2 { // two writes: usually two read batches, so two forwarded batches
			c.send(t, respCmd("RL.SLIDE", key, "1", "60"))
		}
	}
	for _, key := range theirs {
		first, second := readFrame(t, c), readFrame(t, c)
		require.True(t, strings.HasPrefix(first, "[1 "), "%s: the first request is admitted, got %s", key, first)
		require.True(t, strings.HasPrefix(second, "[0 "), "%s: the second is denied, got %s", key, second)
	}
	assert.Equal(t, int64(2*len(theirs)), nodes[0].srv.rt.Stats().Forwarded, "every request was forwarded")
}
