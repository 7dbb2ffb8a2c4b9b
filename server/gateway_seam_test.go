package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/gateway/batch"
	"github.com/rlstore/rlstore/gateway/rlsconfig"
)

// sendCounter counts the batches a node sends its peers.
type sendCounter struct {
	cluster.Forwarder
	sends *atomic.Int64
}

func (c sendCounter) Send(addr string, lane uint64, payload []byte, n int, r cluster.Replier) {
	c.sends.Add(1)
	c.Forwarder.Send(addr, lane, payload, n, r)
}

const seamYAML = `domain: d
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 5}
`

// TestGatewayCluster sends ShouldRateLimit to every node of a cluster in
// turn, each call with the descriptors of ten users: each user gets one
// limit, whichever node is asked, and a call costs a node one batch per
// other owner, not one per descriptor.
func TestGatewayCluster(t *testing.T) {
	var sends [3]atomic.Int64
	var i atomic.Int32
	nodes := startTestCluster(t, 3, clusterOpts{wrap: func(f cluster.Forwarder) cluster.Forwarder {
		return sendCounter{Forwarder: f, sends: &sends[i.Add(1)-1]}
	}})
	cfg, err := rlsconfig.Load([]rlsconfig.Source{{Name: "d.yaml", Data: []byte(seamYAML)}})
	require.NoError(t, err)
	svcs := make([]*gateway.Service, len(nodes))
	for n, node := range nodes {
		d := node.srv.Gateway(4)
		t.Cleanup(func() { _ = d.Close() })
		svcs[n] = gateway.NewService(d, gateway.Options{})
		svcs[n].SetConfig(cfg)
	}
	req := &pb.RateLimitRequest{Domain: "d"}
	for u := 0; u < 10; u++ {
		req.Descriptors = append(req.Descriptors, &pbstruct.RateLimitDescriptor{
			Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "user", Value: fmt.Sprint("u", u)}}})
	}
	admitted := make([]int, 10)
	for call := 0; call < 9; call++ {
		n := call % 3
		before := sends[n].Load()
		resp, err := svcs[n].ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		for u, st := range resp.Statuses {
			if st.Code == pb.RateLimitResponse_OK {
				admitted[u]++
			}
		}
		assert.LessOrEqual(t, sends[n].Load()-before, int64(2), "call %d on node %d: one batch per other owner", call, n)
	}
	for u, a := range admitted {
		assert.Equal(t, 5, a, "user u%d: one limit of 5 across the nodes", u)
	}
}

// TestGatewaySeamKinds checks each kind's command and reply through the seam,
// and a store error reported per request.
func TestGatewaySeamKinds(t *testing.T) {
	s := newTestServer(t, Config{MaxKeyBytes: 64})
	serveTest(t, s)
	g := s.Gateway(2)
	defer g.Close()
	reqs := []batch.Request{
		{Key: []byte("c"), Kind: batch.Count, Limit: 2, Window: time.Minute, Hits: 3},
		{Key: []byte("c"), Kind: batch.Count, Limit: 2, Window: time.Minute, Hits: 0},
		{Key: []byte("f"), Kind: batch.Fixed, Limit: 2, Window: time.Minute, Hits: 3},
		{Key: []byte("s"), Kind: batch.Slide, Limit: 2, Window: time.Minute, Hits: 1},
		{Key: []byte("t"), Kind: batch.Token, Limit: 2, Window: time.Minute, Hits: 1},
		{Key: []byte("l"), Kind: batch.Log, Limit: 2, Window: time.Minute, Hits: 1},
		{Key: []byte("q"), Kind: batch.Leaky, Limit: 2, Window: time.Minute, Hits: 1},
		{Key: make([]byte, 100), Kind: batch.Fixed, Limit: 2, Window: time.Minute, Hits: 1},
	}
	out := make([]batch.Result, len(reqs))
	require.NoError(t, g.Decide(context.Background(), reqs, out))
	assert.Equal(t, int64(3), out[0].Count, "every hit counts")
	assert.Equal(t, int64(3), out[1].Count, "a check counts nothing")
	assert.False(t, out[2].Allowed)
	for i := 3; i < 7; i++ {
		assert.True(t, out[i].Allowed, "%d", i)
		assert.Equal(t, int64(1), out[i].Remaining, "%d", i)
	}
	assert.Error(t, out[7].Err, "a key past --max-key-bytes")
	assert.NoError(t, out[6].Err)

	var wg sync.WaitGroup
	for w := 0; w < 8; w++ { // more batches at once than connections
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := make([]batch.Result, 1)
			for k := 0; k < 50; k++ {
				assert.NoError(t, g.Decide(context.Background(), reqs[3:4], o))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, g.Close())
	assert.Error(t, g.Decide(context.Background(), reqs[:1], out[:1]), "closed")
}
