package persistence

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a Subscriber that keeps the last state it saw of each key.
type recorder struct {
	mu      sync.Mutex
	keys    map[string]shard.Entry
	flushes int
}

func (r *recorder) Changes(_ int, es []shard.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.keys == nil {
		r.keys = map[string]shard.Entry{}
	}
	for _, e := range es {
		e = cloneEntry(e)
		if e.Deleted() {
			delete(r.keys, string(e.Key))
		} else {
			r.keys[string(e.Key)] = e
		}
	}
}

func (r *recorder) Flushed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.flushes++
	clear(r.keys)
}

// live returns the recorded states still live at now, as liveAt sorts them.
func (r *recorder) live(t *testing.T, now int64) []shard.Entry {
	m := newMap(t, 4)
	r.mu.Lock()
	for _, e := range r.keys {
		require.NoError(t, m.Import(e, now))
	}
	r.mu.Unlock()
	return liveAt(m, now)
}

// TestFeedSharesChangesWithTheLog: a second subscriber draining the feed
// often, concurrently with writes and log flushes, steals nothing from the
// log: after a restart the log holds every key, and the subscriber holds
// the same states, deletes and FLUSHALL included.
func TestFeedSharesChangesWithTheLog(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	rec := &recorder{}
	st.Feed().Subscribe(rec)

	stop := make(chan struct{})
	drained := make(chan struct{})
	go func() { // the shipper's tick, as fast as it goes
		defer close(drained)
		for {
			select {
			case <-stop:
				return
			default:
				st.Feed().Drain()
			}
		}
	}()
	r := rand.New(rand.NewPCG(3, 3))
	traffic(t, m.Decide, r, 300, 3000, c.nano())
	require.NoError(t, st.Flush())
	assert.Empty(t, rec.live(t, c.nano()), "FLUSHALL reached the subscriber after what came before it")
	for round := range 5 {
		traffic(t, m.Decide, r, 300, 2000, c.nano())
		for k := range 20 {
			m.Delete(fmt.Appendf(nil, "key:%d", k+round*20))
		}
		flushLog(t, st)
	}
	close(stop)
	<-drained
	st.Feed().Drain()
	want := liveAt(m, c.nano())
	assert.Equal(t, want, rec.live(t, c.nano()), "the subscriber has every key's last state")
	assert.Equal(t, 1, rec.flushes)
	require.NoError(t, st.Close())

	st2, m2, _ := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2), "the log lost nothing to the other drainer")
}

// TestFeedWithoutStore: a Map with no data dir has a feed of its own; a
// drain hands each changed key once, however many decisions changed it.
func TestFeedWithoutStore(t *testing.T) {
	c := newClock()
	m := newMap(t, 4)
	f := NewFeed(m)
	n := 0
	rec := &recorder{}
	f.Subscribe(rec)
	f.Subscribe(countSub{&n})
	for range 50 {
		_, err := m.Decide([]byte("hot"), slideP, c.nano(), 1, false)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, f.Drain())
	assert.Equal(t, 1, n)
	assert.Zero(t, f.Drain(), "nothing changed since")
	assert.Equal(t, liveAt(m, c.nano()), rec.live(t, c.nano()))
}

type countSub struct{ n *int }

func (s countSub) Changes(_ int, es []shard.Entry) { *s.n += len(es) }
func (s countSub) Flushed()                        {}

// cloneEntry copies e out of the drain's buffers.
func cloneEntry(e shard.Entry) shard.Entry {
	e.Key = bytes.Clone(e.Key)
	e.Counters = slices.Clone(e.Counters)
	return e
}

// TestFeedDrainAllocatesNothing: once warm, a drain of busy shards into the
// log allocates nothing: the feed hands each shard over in pieces into
// entries it keeps, and the log encodes them into a buffer it keeps. While
// 1M keys were filled with a data dir, drains that allocated (entries
// regrown every drain, a map per encoded block) left garbage and free heap
// resident right after the fill: 2 B a key more than without a data dir.
func TestFeedDrainAllocatesNothing(t *testing.T) {
	c := newClock()
	st, m, _ := openStore(t, t.TempDir(), c.opts(FsyncEverysec))
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	keys := make([][]byte, 16*1500) // 1,500 a shard: more than a piece, and than a feed keeps
	for i := range keys {
		keys[i] = fmt.Appendf(nil, "user:%07d:api", i)
	}
	drained := 0
	round := func() {
		for _, k := range keys {
			if _, err := m.Decide(k, slideP, c.nano(), 1, false); err != nil {
				panic(err)
			}
		}
		drained = st.Feed().Drain()
	}
	round()
	assert.Zero(t, testing.AllocsPerRun(5, round), "a warm drain allocates nothing")
	assert.Equal(t, len(keys), drained)
}
