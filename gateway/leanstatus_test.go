package gateway_test

import (
	"context"
	"errors"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/rlstore/rlstore/gateway/batch"
)

// failing is a decider that fails every batch whose first key has the value "fail".
type failing struct{ batch.Decider }

func (f failing) Decide(ctx context.Context, reqs []batch.Request, out []batch.Result) error {
	if string(reqs[0].Key[len(reqs[0].Key)-len("=fail|c60"):]) == "=fail|c60" {
		return errors.New("store says no")
	}
	return f.Decider.Decide(ctx, reqs, out)
}

// TestLeanStatusFields checks the status of every error the service
// answers, on the lean loop against grpc-go's transport as grpc-go's
// client sees them: the code, the message, and no details (no error of
// the service carries any, nor does any of envoyproxy/ratelimit's, whose
// errors are plain Go errors: grpc-go sends them as UNKNOWN with their
// text). On the wire, the lean loop sends no grpc-status-details-bin then.
func TestLeanStatusFields(t *testing.T) {
	wrap := func(d batch.Decider) batch.Decider { return failing{d} }
	type want struct {
		code int
		msg  string
	}
	cases := []struct {
		name string
		call func(r *rig) error
		want want
	}{
		{"empty domain", func(r *rig) error { _, err := r.send(&pb.RateLimitRequest{}); return err },
			want{2, "rate limit domain must not be empty"}},
		{"no descriptors", func(r *rig) error { _, err := r.send(&pb.RateLimitRequest{Domain: "api"}); return err },
			want{2, "rate limit descriptor list must not be empty"}},
		{"a store error", func(r *rig) error { _, err := r.call("api", 0, []string{"remote_address", "fail"}); return err },
			want{14, "rlstore: store says no"}},
		{"an unknown health service", func(r *rig) error {
			_, err := healthpb.NewHealthClient(r.conn).Check(context.Background(), &healthpb.HealthCheckRequest{Service: "nope"})
			return err
		}, want{5, "unknown service"}},
	}
	for _, grpcGo := range []bool{false, true} {
		for _, c := range cases {
			r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, wrap: wrap, grpcGo: grpcGo})
			r.ask(t, "api", 0, []string{"remote_address", "a"}) // the lean loop takes the connection
			s := status.Convert(c.call(r))
			assert.Equal(t, c.want, want{int(s.Code()), s.Message()}, "%s (grpc-go only: %v)", c.name, grpcGo)
			assert.Empty(t, s.Details(), "%s (grpc-go only: %v)", c.name, grpcGo)
		}
	}
	noConfig := newRig(t, rigOpts{})
	_, err := noConfig.call("api", 0, []string{"remote_address", "a"})
	s := status.Convert(err)
	assert.Equal(t, want{2, "no rate limit configuration loaded"}, want{int(s.Code()), s.Message()})

	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, wrap: wrap})
	h := dialH2(t, r.addr)
	h.headers(3, pathRLS, false)
	h.data(3, rlsBody(t, "api", "remote_address", "fail"), true)
	a := h.answer(3)
	require.Equal(t, "14", a.status)
	assert.Equal(t, "rlstore: store says no", a.message)
	assert.False(t, a.details, "grpc-status-details-bin sent")
}
