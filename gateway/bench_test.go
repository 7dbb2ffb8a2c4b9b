package gateway_test

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/gateway/rlsconfig"
	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// benchService is a service over a real server's seam, with one domain
// "b" whose "user" descriptors have a limit far above any test's count.
func benchService(tb testing.TB) *gateway.Service {
	store, err := shard.New(shard.Config{})
	require.NoError(tb, err)
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Store: store, Logger: quiet()})
	require.NoError(tb, err)
	ready := make(chan net.Addr, 1)
	go func() { _ = srv.Serve(ready) }()
	<-ready
	tb.Cleanup(func() { _ = srv.Close() })
	d := srv.Gateway(8)
	tb.Cleanup(func() { _ = d.Close() })
	cfg, err := rlsconfig.Load([]rlsconfig.Source{{Name: "b.yaml", Data: []byte("domain: b\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 1000000000}\n")}})
	require.NoError(tb, err)
	svc := gateway.NewService(d, gateway.Options{})
	svc.SetConfig(cfg)
	return svc
}

// TestAnswerAllocs checks that the lean loop's call allocates nothing for
// its answer: the usual answer (one or three descriptors, OK) is built in
// the call's pooled memory and appended to the stream's buffer.
func TestAnswerAllocs(t *testing.T) {
	svc := benchService(t)
	for _, n := range []int{1, 3} {
		req := &pb.RateLimitRequest{Domain: "b"}
		for j := range n {
			req.Descriptors = append(req.Descriptors, desc("user", fmt.Sprint(n, j)))
		}
		var dst []byte
		call := func() {
			var err error
			dst, err = gateway.AppendShouldRateLimit(svc, dst[:0], context.Background(), req)
			require.NoError(t, err)
		}
		call()
		got := &pb.RateLimitResponse{}
		require.NoError(t, proto.Unmarshal(dst[5:], got))
		require.Len(t, got.Statuses, n)
		assert.Equal(t, pb.RateLimitResponse_OK, got.OverallCode)
		assert.Equal(t, uint32(1000000000-1), got.Statuses[0].LimitRemaining, "the first call's remaining")
		if !underRace {
			assert.Zero(t, testing.AllocsPerRun(200, call), "allocations per call of %d descriptors", n)
		}
	}
}

// BenchmarkShouldRateLimit measures a call through the service and the
// server's seam (no gRPC transport), for one and three descriptors, over
// 1000 warm keys: ShouldRateLimit as grpc-go calls it, and append as the
// lean loop does.
func BenchmarkShouldRateLimit(b *testing.B) {
	svc := benchService(b)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("descriptors=%d", n), func(b *testing.B) {
			reqs := make([]*pb.RateLimitRequest, 1000)
			for i := range reqs {
				reqs[i] = &pb.RateLimitRequest{Domain: "b"}
				for j := 0; j < n; j++ {
					reqs[i].Descriptors = append(reqs[i].Descriptors, desc("user", fmt.Sprint(i*n+j)))
				}
			}
			b.ReportAllocs()
			start := cpuTime()
			defer func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }()
			b.SetParallelism(16) // calls wait on the server's goroutine: keep several in flight, as Envoy does
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					if _, err := svc.ShouldRateLimit(context.Background(), reqs[i%len(reqs)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
		b.Run(fmt.Sprintf("append/descriptors=%d", n), func(b *testing.B) {
			reqs := make([]*pb.RateLimitRequest, 1000)
			for i := range reqs {
				reqs[i] = &pb.RateLimitRequest{Domain: "b"}
				for j := 0; j < n; j++ {
					reqs[i].Descriptors = append(reqs[i].Descriptors, desc("user", fmt.Sprint(i*n+j)))
				}
			}
			b.ReportAllocs()
			b.SetParallelism(16)
			b.RunParallel(func(pb *testing.PB) {
				var dst []byte
				var err error
				i := 0
				for pb.Next() {
					if dst, err = gateway.AppendShouldRateLimit(svc, dst[:0], context.Background(), reqs[i%len(reqs)]); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		})
	}
}

// cpuTime is the process's CPU time: on a shared host, wall time per op
// says more about the other tenants than about the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
