package gateway

import (
	"context"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// LeanCounts are the connections the lean loop served and those it handed to grpc-go.
func LeanCounts(s *Server) (served, handed int64) {
	if s.lean == nil {
		return 0, 0
	}
	return s.lean.served.Load(), s.lean.handed.Load()
}

// AppendShouldRateLimit is the lean loop's call: ShouldRateLimit with its answer appended as a gRPC message.
func AppendShouldRateLimit(s *Service, dst []byte, ctx context.Context, req *pb.RateLimitRequest) ([]byte, error) {
	return s.appendShouldRateLimit(dst, ctx, req)
}
