package main

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlstore/rlstore/loadtest/internal/hist"
)

// grpcGen drives the service with grpc-go's client (-client grpc): a
// goroutine per call in flight, the calls spread over the connections.
type grpcGen struct {
	cfg     config
	t       *tally
	stop    *stopper
	conns   []*grpc.ClientConn
	clients []pb.RateLimitServiceClient
}

func newGRPCGen(cfg config, t *tally, stop *stopper) (*grpcGen, error) {
	g := &grpcGen{cfg: cfg, t: t, stop: stop}
	for range cfg.conns {
		conn, err := grpc.NewClient(cfg.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			g.close()
			return nil, err
		}
		g.conns = append(g.conns, conn)
		g.clients = append(g.clients, pb.NewRateLimitServiceClient(conn))
	}
	return g, nil
}

func (g *grpcGen) close() {
	for _, c := range g.conns {
		_ = c.Close()
	}
}

func (g *grpcGen) run() (*hist.Histogram, error) {
	hs := make([]hist.Histogram, g.cfg.c)
	var wg sync.WaitGroup
	for w := range g.cfg.c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			c := g.clients[w%len(g.clients)]
			for g.stop.next() {
				req := grpcRequest(g.cfg, r)
				t := time.Now()
				resp, err := c.ShouldRateLimit(context.Background(), req)
				hs[w].Record(time.Since(t))
				g.t.calls.Add(1)
				switch {
				case err != nil:
					g.t.fail(err.Error())
				case resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT:
					g.t.over.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	var h hist.Histogram
	for i := range hs {
		h.Merge(&hs[i])
	}
	return &h, nil
}

func grpcRequest(cfg config, r *rand.Rand) *pb.RateLimitRequest {
	req := &pb.RateLimitRequest{Domain: cfg.domain, Descriptors: make([]*pbstruct.RateLimitDescriptor, cfg.descriptors)}
	for i := range req.Descriptors {
		req.Descriptors[i] = &pbstruct.RateLimitDescriptor{Entries: []*pbstruct.RateLimitDescriptor_Entry{
			{Key: cfg.key, Value: strconv.Itoa(r.IntN(cfg.keys))}}}
	}
	return req
}
