package gateway

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
)

// DefaultMaxRecvBytes bounds one gRPC request, so that nothing a request
// makes the server allocate is unbounded: a descriptor list that large is
// far beyond any gateway's.
const DefaultMaxRecvBytes = 1 << 20

// streamWorkers is the least number of goroutines that run calls: a
// gateway fleet's calls in flight, each a goroutine with its grown stack
// (a call past it runs on a goroutine of its own).
const streamWorkers = 128

// ServerConfig configures the gRPC server.
type ServerConfig struct {
	Service      *Service
	TLS          *tls.Config  // nil: plain text
	Ready        func() error // nil error: SERVING on grpc.health.v1; default always ready
	MaxRecvBytes int          // default DefaultMaxRecvBytes
	Logger       *slog.Logger

	// GRPCGoOnly serves every call through grpc-go's transport, none
	// through the lean connection loop (lean.go): --grpc-lean no.
	GRPCGoOnly bool
}

// Envoy keeps its connection to the service open; as envoyproxy/ratelimit
// does, age it out so that a new node of a cluster behind a load balancer
// gets connections too.
const (
	maxConnectionAge      = 24 * time.Hour
	maxConnectionAgeGrace = time.Hour
)

// Server is the gRPC server of the rate limit service, grpc.health.v1
// and server reflection.
type Server struct {
	g     *grpc.Server
	lean  *lean         // nil: grpc-go serves every connection
	fb    *connListener // the connections lean hands grpc-go
	fbRun sync.Once
}

// NewServer builds the gRPC server; Serve serves it on a listener.
func NewServer(cfg ServerConfig) *Server {
	if cfg.MaxRecvBytes == 0 {
		cfg.MaxRecvBytes = DefaultMaxRecvBytes
	}
	if cfg.Ready == nil {
		cfg.Ready = func() error { return nil }
	}
	opts := []grpc.ServerOption{
		grpc.MaxRecvMsgSize(cfg.MaxRecvBytes),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: maxConnectionAge, MaxConnectionAgeGrace: maxConnectionAgeGrace}),
		// Calls run on a pool of goroutines, not one new goroutine each,
		// whose stack would grow again on every call (measured: stack
		// growth was 7% of the server's CPU under load without it). A
		// call waits on the store while it runs, so the pool is sized
		// for the calls in flight, not for the cores: with one worker a
		// core, most calls found every worker busy and got a new
		// goroutine all the same.
		grpc.NumStreamWorkers(uint32(max(streamWorkers, 16*runtime.GOMAXPROCS(0)))),
		// ShouldRateLimit's request and answer without protobuf's
		// reflection (codec.go); everything else through protobuf.
		grpc.ForceServerCodecV2(newCodec()),
	}
	// With the lean loop, TLS is its: grpc-go gets connections already
	// through their handshake.
	if cfg.TLS != nil && cfg.GRPCGoOnly {
		opts = append(opts, grpc.Creds(credentials.NewTLS(cfg.TLS)))
	}
	g := grpc.NewServer(opts...)
	h := &health{ready: cfg.Ready}
	pb.RegisterRateLimitServiceServer(g, cfg.Service)
	healthpb.RegisterHealthServer(g, h)
	reflection.Register(g)
	s := &Server{g: g}
	if !cfg.GRPCGoOnly {
		s.fb = newConnListener()
		s.lean = newLean(cfg, h, s.fb)
	}
	return s
}

// Serve serves ln until Stop or GracefulStop.
func (s *Server) Serve(ln net.Listener) error {
	if s.lean == nil {
		return s.g.Serve(ln)
	}
	s.fbRun.Do(func() { go func() { _ = s.g.Serve(s.fb) }() })
	return s.lean.serve(ln)
}

// GracefulStop stops accepting and waits for the calls under way, until ctx ends; then it stops them.
func (s *Server) GracefulStop(ctx context.Context) {
	if s.lean != nil {
		s.lean.stop(ctx, true)
	}
	done := make(chan struct{})
	go func() { s.g.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.g.Stop()
		<-done
	}
}

// Stop closes every connection at once.
func (s *Server) Stop() {
	if s.lean != nil {
		s.lean.stop(context.Background(), false)
	}
	s.g.Stop()
}

// health is grpc.health.v1: SERVING exactly when ready says so (rlstore's
// /readyz), for the whole server ("") and the rate limit service.
type health struct {
	healthpb.UnimplementedHealthServer
	ready func() error
}

// healthPoll is how often Watch looks at readiness.
const healthPoll = 250 * time.Millisecond

func (h *health) status(service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	switch service {
	case "", pb.RateLimitService_ServiceDesc.ServiceName:
	default:
		return healthpb.HealthCheckResponse_SERVICE_UNKNOWN, status.Error(codes.NotFound, "unknown service")
	}
	if h.ready() != nil {
		return healthpb.HealthCheckResponse_NOT_SERVING, nil
	}
	return healthpb.HealthCheckResponse_SERVING, nil
}

func (h *health) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	st, err := h.status(req.GetService())
	if err != nil {
		return nil, err
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h *health) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	last := healthpb.HealthCheckResponse_ServingStatus(-1)
	t := time.NewTicker(healthPoll)
	defer t.Stop()
	for {
		st, _ := h.status(req.GetService())
		if st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-t.C:
		}
	}
}
