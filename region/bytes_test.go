package region

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// heapAfterGC returns the bytes of live heap objects.
func heapAfterGC() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestBytesTracksHeap: Bytes, which the server counts in --maxmemory,
// stays within a quarter of what the table really holds on the Go heap,
// for keys held only for another region and for keys this region decided
// and synced, FIXED and SLIDE, and goes back to nothing when they go.
func TestBytesTracksHeap(t *testing.T) {
	if testing.Short() || underRace {
		t.Skip("measures the heap over 10,000 keys")
	}
	const n = 5_000
	for _, kind := range []window.Kind{window.KindFixed, window.KindSlide} {
		t.Run(kind.String(), func(t *testing.T) {
			lim := Limit{Kind: kind, Limit: 1000, Window: time.Minute}
			st := newStores(t, 3, 0.1, 0.5)
			now := t0 + int64(2*time.Minute) // past the recovery of a new store
			before := heapAfterGC()
			for i := range n { // decided in region 0: held only for it in region 1
				require.True(t, st[0].Decide([]byte("remote:user:"+strconv.Itoa(i)), lim, now, 1, false).Allowed)
			}
			for i := range n { // decided in region 1
				require.True(t, st[1].Decide([]byte("own:user:"+strconv.Itoa(i)), lim, now, 1, false).Allowed)
			}
			for range 2 {
				now += int64(100 * time.Millisecond)
				exchange(st, now)
			}
			heap := heapAfterGC() - before
			// Region 1's part of the heap: the stores of regions 0 and 2
			// hold about as much between them (0 its own keys and 1's
			// received, 2 both received), so compare the sum.
			total := st[0].Bytes() + st[1].Bytes() + st[2].Bytes()
			ratio := float64(total) / float64(heap)
			t.Logf("%s: %d keys in 3 stores, heap %d B (%.0f B/key), Bytes %d (ratio %.2f)", kind, 2*n, heap, float64(heap)/float64(6*n), total, ratio)
			assert.InDelta(t, 1, ratio, 0.25, "Bytes / heap")
			for i := range st {
				st[i].ForgetAll()
			}
			now += int64(10 * time.Minute)
			for i := range st {
				st[i].Sweep(now, 1<<30)
			}
			for i := range st {
				assert.Zero(t, st[i].Bytes(), "store %d after every key went", i)
			}
			runtime.KeepAlive(st)
		})
	}
}

// TestRoomRefusesNewRemoteKeys: past the room the caller gives, a new key
// held only for another region is refused as past MaxRemote (so the
// sender keeps its units unacknowledged, within its escrow), and a key
// already held still takes entries.
func TestRoomRefusesNewRemoteKeys(t *testing.T) {
	st := newStores(t, 2, 0.1, 0)
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	now := t0 + int64(2*time.Minute)
	st[1].SetRoom(func(n int64) bool { return n <= 1 }) // nothing more fits
	require.True(t, st[0].Decide([]byte("a"), lim, now, 1, false).Allowed)
	exchange(st, now)
	assert.False(t, st[1].Has([]byte("a")), "refused for want of room")
	assert.Equal(t, int64(1), st[1].Stats(now).KeysRefused)
	admitted := int64(1)
	for range 100 {
		now += int64(time.Millisecond)
		if st[0].Decide([]byte("a"), lim, now, 1, false).Allowed {
			admitted++
		}
		exchange(st, now)
	}
	assert.Equal(t, int64(5), admitted, "region 0's admissions of a key region 1 refuses: its escrow, no more")

	st[1].SetRoom(nil)
	now += int64(time.Second + time.Millisecond) // the sender's resend
	exchange(st, now)
	exchange(st, now)
	assert.True(t, st[1].Has([]byte("a")), "taken once there is room")
	assert.Positive(t, st[1].Bytes())
}

// TestBytesCountsLinkEntries: the entries each link keeps until their
// batch is acknowledged (the ring of the last 64 batches, which the
// batches in flight share) count in Bytes, held to the Go heap, and are
// let go when acknowledged.
func TestBytesCountsLinkEntries(t *testing.T) {
	if testing.Short() || underRace {
		t.Skip("measures the heap over 5,000 keys")
	}
	const n, rounds = 5_000, 8
	lim := Limit{Kind: window.KindFixed, Limit: 1000, Window: time.Minute}
	st := newStores(t, 3, 0.1, 0.5)
	now := t0 + int64(2*time.Minute)
	names := make([][]byte, n)
	for i := range names {
		names[i] = []byte("user:" + strconv.Itoa(i))
	}
	before := heapAfterGC()
	b0 := st[0].Bytes()
	var held [][]*Batch // the batches in flight: no region answers
	for range rounds {
		now += int64(100 * time.Millisecond)
		for _, k := range names {
			require.True(t, st[0].Decide(k, lim, now, 1, false).Allowed)
		}
		held = append(held, st[0].Sync(now))
	}
	heap := heapAfterGC() - before
	grew := st[0].Bytes() - b0
	t.Logf("%d keys changed in %d unacknowledged syncs to 2 regions: heap +%d B, Bytes +%d B (ratio %.2f)",
		n, rounds, heap, grew, float64(grew)/float64(heap))
	assert.InDelta(t, 1, float64(grew)/float64(heap), 0.25, "Bytes growth / heap growth")
	assert.GreaterOrEqual(t, grew, int64(rounds*2*n)*linkEntryBytes, "every kept entry counts")

	peak := st[0].Bytes()
	for _, bs := range held {
		for to, b := range bs {
			if b != nil {
				st[0].Acked(st[to].Receive(b, now), now)
			}
		}
	}
	held = nil
	assert.LessOrEqual(t, st[0].Bytes(), peak-int64(rounds*2*n)*linkEntryBytes, "acknowledged entries are let go")
	runtime.KeepAlive(held)
}
