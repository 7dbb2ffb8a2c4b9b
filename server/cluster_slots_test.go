package server

import (
	"context"
	"fmt"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterSlotsSmall: with three nodes CLUSTER SLOTS lists a few hundred
// ranges in slot order, under 64 KB (per-slot hashing made it 10,806
// ranges, 1 MB), and a client reads every slot from it.
func TestClusterSlotsSmall(t *testing.T) {
	nodes := startTestCluster(t, 3, clusterOpts{secret: []byte("k")})
	ctx := context.Background()
	v := nodes[0].srv.cl.view()
	raw := nodes[0].srv.cl.slotsReplyFor(v).resp2
	assert.LessOrEqual(t, len(raw), 64<<10, "CLUSTER SLOTS' bytes")
	assert.Same(t, nodes[0].srv.cl.slotsReplyFor(v), nodes[0].srv.cl.slotsReplyFor(v), "encoded once per table")
	//lint:ignore SA1019 CLUSTER SLOTS is deprecated in Redis 7 but older cluster-aware clients still send it
	slots, err := newClient(t, nodes[0].addr, 2).ClusterSlots(ctx).Result()
	require.NoError(t, err)
	t.Logf("3 nodes: %d ranges, %d bytes", len(slots), len(raw))
	next := 0
	for _, s := range slots {
		require.Equal(t, next, int(s.Start), "ranges in slot order, none missing")
		owner := v.Table.Owner(int(s.Start))
		assert.Equal(t, owner.Addr, s.Nodes[0].Addr, "slot %d", s.Start)
		assert.Equal(t, owner.Name, v.Table.Owner(int(s.End)).Name)
		next = int(s.End) + 1
	}
	assert.Equal(t, cluster.Slots, next)
}

// BenchmarkClusterSlots is the cost of CLUSTER SLOTS' reply: encoding it
// (once per table) and taking it from the cache (every other time).
func BenchmarkClusterSlots(b *testing.B) {
	for _, n := range []int{3, 10} {
		var ns []cluster.Node
		for i := range n {
			ns = append(ns, cluster.Node{Name: fmt.Sprint("node", i), Addr: fmt.Sprintf("10.0.0.%d:6379", i+1)})
		}
		tb, err := cluster.NewTable(1, ns)
		require.NoError(b, err)
		v := &cluster.View{Self: "node0", Table: tb}
		b.Run(fmt.Sprintf("encode/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var buf []byte
			for b.Loop() {
				buf = appendClusterSlots(buf[:0], tb)
			}
			b.ReportMetric(float64(len(buf)), "bytes/reply")
		})
		b.Run(fmt.Sprintf("cached/%d", n), func(b *testing.B) {
			cn := &clusterNode{}
			cn.slotsReplyFor(v)
			b.ReportAllocs()
			for b.Loop() {
				_ = cn.slotsReplyFor(v)
			}
		})
	}
}
