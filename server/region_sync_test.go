package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRegionSyncAllocs: a sync that finds every link busy (so makes no
// batch) allocates nothing: its scratch slices are kept between syncs. It
// allocated the links' ready flags and the batches' slice every time.
func TestRegionSyncAllocs(t *testing.T) {
	rc := &RegionConfig{Name: "eu", Peers: []RegionPeer{{Name: "us", Addr: "127.0.0.1:1"}, {Name: "ap", Addr: "127.0.0.1:2"}},
		Secret: []byte("s"), Forwarder: &ackingPeer{}}
	s := newTestServer(t, Config{Region: rc})
	t.Cleanup(func() { _ = s.Close() })
	for _, l := range s.reg.links {
		if l != nil {
			l.busy.Store(true)
		}
	}
	allocs := testing.AllocsPerRun(100, s.reg.syncOnce)
	assert.Zero(t, allocs, "syncOnce with every link busy: %v allocations per sync, want 0", allocs)
}
