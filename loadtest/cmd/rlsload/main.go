// Command rlsload drives a rate limit service (envoy.service.ratelimit.v3) over gRPC in a closed loop and reports calls per second, latency and the servers' CPU per decision.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlstore/rlstore/loadtest/internal/hist"
	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

type config struct {
	addr        string
	conns, c    int
	dur         time.Duration
	keys        int
	descriptors int
	domain, key string
	pids        string
}

// result is one run's numbers, printed as JSON.
type result struct {
	Calls           uint64  `json:"calls"`
	Errors          uint64  `json:"errors"`
	OverLimit       uint64  `json:"over_limit"`
	CallsPerSec     float64 `json:"calls_per_sec"`
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	P50us           float64 `json:"p50_us"`
	P99us           float64 `json:"p99_us"`
	ServerCPUus     float64 `json:"server_cpu_us_per_decision"` // the pids' CPU together
	ClientCPUus     float64 `json:"client_cpu_us_per_call"`
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:8081", "the service's gRPC `host:port`")
	flag.IntVar(&cfg.conns, "conns", 4, "gRPC connections")
	flag.IntVar(&cfg.c, "c", 50, "calls in flight (closed loop)")
	flag.DurationVar(&cfg.dur, "dur", 4*time.Second, "how long to run")
	flag.IntVar(&cfg.keys, "keys", 100000, "distinct descriptor values, drawn uniformly")
	flag.IntVar(&cfg.descriptors, "descriptors", 1, "descriptors per call")
	flag.StringVar(&cfg.domain, "domain", "load", "the domain")
	flag.StringVar(&cfg.key, "key", "user", "the descriptor key")
	flag.StringVar(&cfg.pids, "pids", "", "comma-separated `pids` of the server processes whose CPU counts")
	flag.Parse()
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlsload:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(res)
}

func run(cfg config) (result, error) {
	clients := make([]pb.RateLimitServiceClient, cfg.conns)
	for i := range clients {
		conn, err := grpc.NewClient(cfg.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return result{}, err
		}
		defer conn.Close()
		clients[i] = pb.NewRateLimitServiceClient(conn)
	}
	pids, err := parsePids(cfg.pids)
	if err != nil {
		return result{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.dur)
	defer cancel()
	cpu0, self0 := serverCPU(pids), proc.SelfCPU()
	start := time.Now()
	var calls, errs, over atomic.Uint64
	hs := make([]hist.Histogram, cfg.c)
	var wg sync.WaitGroup
	for w := 0; w < cfg.c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			c := clients[w%len(clients)]
			for ctx.Err() == nil {
				req := request(cfg, r)
				t := time.Now()
				resp, err := c.ShouldRateLimit(context.Background(), req)
				hs[w].Record(time.Since(t))
				calls.Add(1)
				switch {
				case err != nil:
					errs.Add(1)
				case resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT:
					over.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu, self := serverCPU(pids)-cpu0, proc.SelfCPU()-self0
	var h hist.Histogram
	for i := range hs {
		h.Merge(&hs[i])
	}
	n := calls.Load()
	dec := float64(n) * float64(cfg.descriptors)
	return result{
		Calls: n, Errors: errs.Load(), OverLimit: over.Load(),
		CallsPerSec: float64(n) / elapsed.Seconds(), DecisionsPerSec: dec / elapsed.Seconds(),
		P50us: us(h.Quantile(0.5)), P99us: us(h.Quantile(0.99)),
		ServerCPUus: us(cpu) / dec, ClientCPUus: us(self) / float64(n),
	}, nil
}

func request(cfg config, r *rand.Rand) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: cfg.domain, Descriptors: make([]*pbstruct.RateLimitDescriptor, cfg.descriptors)}
	for i := range req.Descriptors {
		req.Descriptors[i] = &pbstruct.RateLimitDescriptor{Entries: []*pbstruct.RateLimitDescriptor_Entry{
			{Key: cfg.key, Value: strconv.Itoa(r.IntN(cfg.keys))}}}
	}
	return req
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func parsePids(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f == "" {
			continue
		}
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("-pids: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

// serverCPU is the pids' user and system CPU together.
func serverCPU(pids []int) time.Duration {
	var sum time.Duration
	for _, p := range pids {
		c, err := proc.CPU(p)
		if err == nil {
			sum += c
		}
	}
	return sum
}
