package server

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutForwards fails every forward to the address in cut, as a partition
// between the nodes would; gossip and the lease still pass.
type cutForwards struct {
	cluster.Forwarder
	cut *atomic.Value // []string: the addresses cut off
}

func (f cutForwards) blocked(addr string) error {
	if slices.Contains(f.cut.Load().([]string), addr) {
		return fmt.Errorf("%w: cut by the test", cluster.ErrUnreachable)
	}
	return nil
}

func (f cutForwards) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	if err := f.blocked(addr); err != nil {
		return nil, err
	}
	return f.Forwarder.Forward(ctx, addr, cmds)
}

func (f cutForwards) Send(addr string, lane uint64, payload []byte, n int, r cluster.Replier) {
	if err := f.blocked(addr); err != nil {
		r.Replies(nil, err)
		return
	}
	f.Forwarder.Send(addr, lane, payload, n, r)
}

// cutTo fails every forward to the addresses in cut.
func cutTo(cut *atomic.Value) func(cluster.Forwarder) cluster.Forwarder {
	return func(f cluster.Forwarder) cluster.Forwarder { return cutForwards{Forwarder: f, cut: cut} }
}

// TestUnreachableLocalOneDeciderPerSide: with --owner-unreachable local,
// the two nodes of one side of a 2/2 split (no majority: neither side
// holds its lease) decide a key owned across the cut at one node, the
// slot's substitute, so their side admits one limit more than the
// owner's state, not one per node (before, each node decided from its
// own state: two limits). The owner, asked directly, decides from its
// own state.
func TestUnreachableLocalOneDeciderPerSide(t *testing.T) {
	var cut atomic.Value
	cut.Store([]string(nil))
	nodes := startTestCluster(t, 4, clusterOpts{policy: UnreachableLocal, wrap: cutTo(&cut)})
	side, across := nodes[:2], nodes[2:]
	key, _ := keyOwnedBy(t, nodes, across[0], "side:")
	cs := clients(t, nodes...)
	useToLimit(t, cs[2], []string{key})
	cut.Store([]string{across[0].addr, across[1].addr})
	for _, n := range across {
		n.ml.Kill() // gossip stops: no side reaches a majority
	}
	for _, n := range side {
		require.Eventually(t, func() bool { return !n.srv.ho.Serving() }, deadline, 10*time.Millisecond, "%s loses its lease", n.name)
	}
	admitted := 0
	for range 10 {
		for _, c := range cs[:2] {
			rep, err := c.Do(context.Background(), "RL.SLIDE", key, 5, 3600).Int64Slice()
			require.NoError(t, err, "the side decides")
			admitted += int(rep[0])
		}
	}
	assert.Equal(t, 5, admitted, "the two nodes cut from the owner: one limit between them")
	assert.Equal(t, int64(0), slide5(t, cs[2], key), "the owner decides from its own state")
}
