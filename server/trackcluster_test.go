package server

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrackingForwardedReadsAreNotCached: in a cluster, a tracking client's
// read that another node answers is invalidated right after its reply, alone
// or inside EXEC, because this node never sees the owner's changes.
func TestTrackingForwardedReadsAreNotCached(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k")})
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("remote:", i); ownerOf(nodes, k) != nodes[0] {
			key = k
		}
	}
	r := dialRaw(t, nodes[0].addr)
	hello3(t, r)
	require.Equal(t, "OK", r.call(t, "CLIENT", "TRACKING", "ON"))
	require.Equal(t, "0", r.call(t, "EXISTS", key))
	assert.Equal(t, ">[invalidate ["+key+"]]", readFrame(t, r))

	require.Equal(t, "OK", r.call(t, "MULTI"))
	require.Equal(t, "QUEUED", r.call(t, "PTTL", key))
	require.Equal(t, "[-2]", r.call(t, "EXEC"))
	assert.Equal(t, ">[invalidate ["+key+"]]", readFrame(t, r))
	assert.Equal(t, "PONG", r.call(t, "PING"))
}
