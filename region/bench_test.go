package region

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
)

// BenchmarkDecide is a global decision in the model alone, over 1 and
// 1,000 keys of a one-minute sliding window.
func BenchmarkDecide(b *testing.B) {
	for _, keys := range []int{1, 1000} {
		b.Run(fmt.Sprint("keys=", keys), func(b *testing.B) {
			s, _ := New(Defaults(0, 3))
			lim := Limit{Kind: window.KindSlide, Limit: 1 << 31, Window: time.Minute}
			names := make([][]byte, keys)
			for i := range names {
				names[i] = []byte(fmt.Sprintf("user:%011d", i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				s.Decide(names[i%keys], lim, t0+int64(i)*1000, 1, false)
			}
		})
	}
}

// BenchmarkSyncBytes measures what a sync costs per changed key: 10,000
// keys with 16-byte names, each changed once in the interval, one
// counter each (slide: this second's bucket; fixed: the window).
func BenchmarkSyncBytes(b *testing.B) {
	for _, kind := range []window.Kind{window.KindSlide, window.KindFixed} {
		b.Run(kind.String(), func(b *testing.B) {
			s, _ := New(Defaults(0, 2))
			lim := Limit{Kind: kind, Limit: 1000, Window: time.Minute}
			const keys = 10_000
			var size, n int
			h := s.Config().Header("eu")
			for i := range b.N {
				now := t0 + int64(i)*int64(100*time.Millisecond)
				for k := range keys {
					s.Decide([]byte(fmt.Sprintf("user:%011d", k)), lim, now, 1, false)
				}
				bs := s.Sync(now)
				size += len(AppendBatch(nil, h, bs[1]))
				n += keys
				s.Acked(&Ack{From: 1, Seq: bs[1].Seq, SentAt: now, RecvAt: now}, now)
			}
			b.ReportMetric(float64(size)/float64(n), "bytes/key")
		})
	}
}
