package gateway_test

import (
	"context"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/gateway/rlsconfig"
	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// BenchmarkShouldRateLimit measures a call through the service and the
// server's seam (no gRPC transport), for one and three descriptors, over
// 1000 warm keys.
func BenchmarkShouldRateLimit(b *testing.B) {
	store, err := shard.New(shard.Config{})
	require.NoError(b, err)
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Store: store, Logger: quiet()})
	require.NoError(b, err)
	ready := make(chan net.Addr, 1)
	go func() { _ = srv.Serve(ready) }()
	<-ready
	defer srv.Close()
	d := srv.Gateway(8)
	defer d.Close()
	cfg, err := rlsconfig.Load([]rlsconfig.Source{{Name: "b.yaml", Data: []byte("domain: b\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 1000000000}\n")}})
	require.NoError(b, err)
	svc := gateway.NewService(d, gateway.Options{})
	svc.SetConfig(cfg)
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
	}
}

// cpuTime is the process's CPU time: on a shared host, wall time per op
// says more about the other tenants than about the code.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
