package persistence

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/require"
)

// BenchmarkShipImport is a replica's cost per changed key, in the stages
// one interval's shipment goes through: the primary's drain of its changed
// keys (Feed), their encoding in chunks (AppendEntriesChunks), and the
// backup's decoding and import into its copies (DecodeBatches, ImportBatch).
// Each round decides 4096 random keys of the Map once, as a busy interval
// on many keys does, then ships them; the backup already holds every
// key's copy, as it does in steady state. The decisions are not timed.
// A Slide key's state is a counter per second of its window that saw a
// decision, and each of them ships every time the key changes: counters=30
// is a key decided every second for half a minute. With deltas, the
// entries are cut as the replicator cuts them (Cut, since the last round
// less a second) and go as deltas, which the copies complete.
func BenchmarkShipImport(b *testing.B) {
	const changed = 4096
	p := window.Params{Kind: window.KindSlide, Limit: 1 << 20, Period: time.Minute}
	for _, c := range []struct {
		n, seconds int
		deltas     bool
	}{{1_000, 1, false}, {100_000, 1, false}, {100_000, 30, false}, {100_000, 1, true}, {100_000, 30, true}} {
		n := c.n
		b.Run(fmt.Sprintf("keys=%d/counters=%d/deltas=%v", n, c.seconds, c.deltas), func(b *testing.B) {
			prim, copies := newMap(b, shard.DefaultShards), newMap(b, shard.DefaultShards)
			f := NewFeed(prim)
			sh := &shipSink{copies: copies, deltas: c.deltas}
			f.Subscribe(sh)
			keys := make([][]byte, n)
			now := t0.UnixNano()
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "k:{06S}:%012d", i)
			}
			for sec := range c.seconds { // a counter a second, as a key decided every second has
				for _, k := range keys {
					_, err := prim.Decide(k, p, now+int64(sec)*int64(time.Second), 1, false)
					require.NoError(b, err)
				}
			}
			now += int64(c.seconds) * int64(time.Second)
			f.Drain()
			sh.ship(b, now)
			rng := rand.New(rand.NewPCG(1, 2))
			var drain, encode, load time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				now += int64(time.Millisecond)
				for range changed {
					_, err := prim.Decide(keys[rng.IntN(n)], p, now, 1, false)
					require.NoError(b, err)
				}
				b.StartTimer()
				t := time.Now()
				f.Drain()
				drain += time.Since(t)
				t = time.Now()
				sh.encode(now)
				sh.since = now - int64(time.Second) // the next drain's: this one began at now
				encode += time.Since(t)
				t = time.Now()
				sh.ship(b, now)
				load += time.Since(t)
			}
			per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(b.N*changed) }
			b.ReportMetric(per(drain), "drain-ns/key")
			b.ReportMetric(per(encode), "encode-ns/key")
			b.ReportMetric(per(load), "import-ns/key")
			b.ReportMetric(per(drain+encode+load), "ns/key")
		})
	}
}

// shipSink is a Feed subscriber that keeps the drained entries, encodes
// them into chunks as the replica shipper does, and imports the chunks
// into copies as a backup does.
type shipSink struct {
	copies *shard.Map
	deltas bool  // cut the entries at since and ship deltas
	since  int64 // unix ns
	dec    Decoder
	es     []shard.Entry
	keys   []byte
	ctrs   []uint64
	chunks [][]byte
	bufs   [][]byte
}

func (s *shipSink) Changes(_ int, es []shard.Entry) {
	for _, e := range es { // the shipper encodes at once; here encode() does, so copy
		n := len(s.keys)
		s.keys = append(s.keys, e.Key...)
		e.Key = s.keys[n:len(s.keys):len(s.keys)]
		c := len(s.ctrs)
		s.ctrs = append(s.ctrs, e.Counters...)
		e.Counters = s.ctrs[c:len(s.ctrs):len(s.ctrs)]
		s.es = append(s.es, e)
	}
}

func (s *shipSink) Flushed() {}

func (s *shipSink) encode(now int64) {
	if !s.deltas {
		s.chunks = AppendEntriesChunks(s.chunks[:0], s.es, now, 256<<10, s.fresh)
		s.es, s.keys, s.ctrs = s.es[:0], s.keys[:0], s.ctrs[:0]
		return
	}
	for i := range s.es {
		Cut(&s.es[i], s.since)
	}
	s.chunks = AppendDeltaChunks(s.chunks[:0], s.es, now, 256<<10, s.fresh)
	s.es, s.keys, s.ctrs = s.es[:0], s.keys[:0], s.ctrs[:0]
}

// fresh reuses the buffers of the chunks shipped, as the shipper does.
func (s *shipSink) fresh() []byte {
	if len(s.bufs) == 0 {
		return make([]byte, 0, 320<<10)
	}
	b := s.bufs[len(s.bufs)-1][:0]
	s.bufs = s.bufs[:len(s.bufs)-1]
	return b
}

func (s *shipSink) ship(b *testing.B, now int64) {
	s.dec.Deltas = s.deltas
	for _, c := range s.chunks {
		_, err := s.dec.Decode(c, func(es []shard.Entry) error {
			_, err := s.copies.ImportBatch(es, now)
			return err
		})
		require.NoError(b, err)
		s.bufs = append(s.bufs, c)
	}
	s.chunks = s.chunks[:0]
}

// BenchmarkCodecCounters is the codec's own share of BenchmarkShipImport,
// with no Map: encoding and decoding 4096 Slide entries of n counters each,
// a counter a second with a count of a few units, as a key decided every
// second keeps.
func BenchmarkCodecCounters(b *testing.B) {
	p := window.Params{Kind: window.KindSlide, Limit: 1 << 20, Period: time.Minute}
	for _, n := range []int{1, 30} {
		now := t0.UnixNano()
		es := make([]shard.Entry, 4096)
		for i := range es {
			es[i] = shard.Entry{Key: fmt.Appendf(nil, "k:{06S}:%012d", i), Params: p}
			for s := range n {
				c, _ := p.Kind.Counter(now/int64(time.Second)-int64(n)+int64(s), int64(1+s%3))
				es[i].Counters = append(es[i].Counters, c)
			}
		}
		buf := AppendEntries(nil, es, now)
		b.Run(fmt.Sprintf("encode/counters=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				buf = AppendEntries(buf[:0], es, now)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/key")
		})
		b.Run(fmt.Sprintf("decode/counters=%d", n), func(b *testing.B) {
			var d Decoder
			b.ReportAllocs()
			for range b.N {
				_, err := d.Decode(buf, func([]shard.Entry) error { return nil })
				require.NoError(b, err)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(es)), "ns/key")
		})
	}
}
