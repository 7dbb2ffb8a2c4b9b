package route

import (
	"fmt"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterSlotsEncodedOnce: with three nodes CLUSTER SLOTS' reply is
// under 64 KB (per-slot hashing made it 10,806 ranges, 1 MB), and it is
// encoded once per view (the front's TestClusterSlotsSmall reads it from a
// node).
func TestClusterSlotsEncodedOnce(t *testing.T) {
	var ns []cluster.Node
	for i := range 3 {
		ns = append(ns, cluster.Node{Name: fmt.Sprint("node", i), Addr: fmt.Sprintf("127.0.0.1:%d", 7000+i)})
	}
	tb, err := cluster.NewTable(1, ns)
	require.NoError(t, err)
	v := &cluster.View{Self: "node0", Table: tb}
	rt := &Router{}
	raw := rt.topologyOf(v).slots[0]
	assert.LessOrEqual(t, len(raw), 64<<10, "CLUSTER SLOTS' bytes")
	assert.Same(t, rt.topologyOf(v), rt.topologyOf(v), "encoded once per view")
	t.Logf("3 nodes: %d bytes", len(raw))
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
				buf = appendClusterSlots(buf[:0], tb, 2)
			}
			b.ReportMetric(float64(len(buf)), "bytes/reply")
		})
		b.Run(fmt.Sprintf("cached/%d", n), func(b *testing.B) {
			rt := &Router{}
			rt.topologyOf(v)
			b.ReportAllocs()
			for b.Loop() {
				_ = rt.topologyOf(v)
			}
		})
	}
}
