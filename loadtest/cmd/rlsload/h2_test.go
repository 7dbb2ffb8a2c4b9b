package main

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// fakeRLS answers from the request alone: a descriptor's value v is over
// its limit when v%3 == 0, with v remaining otherwise; the domain "fail"
// fails. It waits a random moment first, so that answers on a connection
// come back out of order.
type fakeRLS struct {
	pb.UnimplementedRateLimitServiceServer
}

func (fakeRLS) ShouldRateLimit(_ context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
	if req.GetDomain() == "fail" {
		return nil, status.Error(codes.Unavailable, "no such domain")
	}
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK}
	for _, d := range req.GetDescriptors() {
		v, _ := strconv.Atoi(d.GetEntries()[0].GetValue())
		st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK, LimitRemaining: uint32(v),
			CurrentLimit:       &pb.RateLimitResponse_RateLimit{RequestsPerUnit: 10, Unit: pb.RateLimitResponse_RateLimit_MINUTE, Name: d.GetEntries()[0].GetKey()},
			DurationUntilReset: &durationpb.Duration{Seconds: int64(v % 60)}}
		if v%3 == 0 {
			st.Code, st.LimitRemaining, resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT, 0, pb.RateLimitResponse_OVER_LIMIT
		}
		resp.Statuses = append(resp.Statuses, st)
	}
	return resp, nil
}

func startFake(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(s, fakeRLS{})
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

type call struct {
	req, answer []byte
	status      int
	msg         string
}

// TestH2MatchesGRPC checks the lean client against grpc-go's: every
// request it sent, asked again through grpc-go's client of the same
// grpc-go server, gets the answer the lean client got, byte for byte once
// decoded; its counts (calls, over limit, errors) are those answers'.
func TestH2MatchesGRPC(t *testing.T) {
	addr := startFake(t)
	var mu sync.Mutex
	var calls []call
	cfg := config{addr: addr, client: "h2", conns: 2, c: 64, dur: time.Minute, n: 3000, keys: 50, descriptors: 3,
		domain: "api", key: "user", record: func(req, answer []byte, st int, msg string) {
			mu.Lock()
			calls = append(calls, call{append([]byte(nil), req...), append([]byte(nil), answer...), st, msg})
			mu.Unlock()
		}}
	res, err := run(cfg)
	require.NoError(t, err)
	assert.Equal(t, uint64(3000), res.Calls)
	assert.Equal(t, uint64(0), res.Errors, res.FirstError)
	require.Len(t, calls, 3000)

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	over := uint64(0)
	for i, c := range calls {
		req := &pb.RateLimitRequest{}
		require.NoError(t, proto.Unmarshal(c.req, req), "call %d: request", i)
		require.Equal(t, "api", req.Domain)
		require.Len(t, req.Descriptors, 3)
		want, err := client.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		require.Equal(t, 0, c.status, "call %d", i)
		got := &pb.RateLimitResponse{}
		require.NoError(t, proto.Unmarshal(c.answer[5:], got), "call %d: answer", i)
		require.True(t, proto.Equal(want, got), "call %d: lean %v, grpc-go %v", i, got, want)
		if got.OverallCode == pb.RateLimitResponse_OVER_LIMIT {
			over++
		}
	}
	assert.Equal(t, over, res.OverLimit)
	assert.NotZero(t, over)
	assert.Less(t, over, res.Calls)

	_, gerr := client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "fail"})
	cfg.domain, cfg.n, cfg.record = "fail", 200, nil
	res, err = run(cfg)
	require.NoError(t, err)
	assert.Equal(t, uint64(200), res.Calls)
	assert.Equal(t, uint64(200), res.Errors)
	assert.Equal(t, "grpc-status "+strconv.Itoa(int(status.Code(gerr)))+": "+status.Convert(gerr).Message(), res.FirstError)
}

// TestGRPCClient runs the grpc-go client over the same server: the same
// counts, for the same kind of run.
func TestGRPCClient(t *testing.T) {
	addr := startFake(t)
	res, err := run(config{addr: addr, client: "grpc", conns: 2, c: 16, dur: time.Minute, n: 500, keys: 50, descriptors: 1, domain: "api", key: "user"})
	require.NoError(t, err)
	assert.Equal(t, uint64(500), res.Calls)
	assert.Equal(t, uint64(0), res.Errors, res.FirstError)
	assert.NotZero(t, res.OverLimit)
}

// TestCheckAnswer checks the lean client's reading of answers.
func TestCheckAnswer(t *testing.T) {
	msg := func(r *pb.RateLimitResponse) []byte {
		b, err := proto.Marshal(r)
		require.NoError(t, err)
		return append([]byte{0, 0, 0, 0, byte(len(b))}, b...)
	}
	ok := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
	code, err := checkAnswer(msg(&pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: []*pb.RateLimitResponse_DescriptorStatus{ok}}), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(codeOK), code)
	for name, b := range map[string][]byte{
		"two statuses for one":  msg(&pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: []*pb.RateLimitResponse_DescriptorStatus{ok, ok}}),
		"no overall code":       msg(&pb.RateLimitResponse{Statuses: []*pb.RateLimitResponse_DescriptorStatus{ok}}),
		"a status without code": msg(&pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: []*pb.RateLimitResponse_DescriptorStatus{{}}}),
		"compressed flag":       append([]byte{1}, msg(&pb.RateLimitResponse{OverallCode: 1, Statuses: []*pb.RateLimitResponse_DescriptorStatus{ok}})[1:]...),
		"length past the end":   {0, 0, 0, 0, 9, 8, 1},
		"truncated field":       {0, 0, 0, 0, 2, 0x12, 5},
		"empty":                 nil,
	} {
		_, err := checkAnswer(b, 1)
		assert.Error(t, err, name)
	}
}
