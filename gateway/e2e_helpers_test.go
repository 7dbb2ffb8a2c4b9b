package gateway_test

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/gateway/batch"
	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// fakeClock is a clock tests move by hand, shared by the store and the service.
type fakeClock struct{ ns atomic.Int64 }

func (c *fakeClock) now() time.Time       { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) set(t time.Time)      { c.ns.Store(t.UnixNano()) }
func (c *fakeClock) add(d time.Duration)  { c.ns.Add(int64(d)) }
func newClock(t time.Time) *fakeClock     { c := &fakeClock{}; c.set(t); return c }
func quiet() *slog.Logger                 { return slog.New(slog.DiscardHandler) }
func writeFile(t *testing.T, p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
func entry(k, v string) *pbstruct.RateLimitDescriptor_Entry {
	return &pbstruct.RateLimitDescriptor_Entry{Key: k, Value: v}
}

// t0 starts a whole day since the epoch (so a minute, an hour and a day too).
var t0 = time.Unix(1767225600, 0) // 2026-01-01T00:00:00Z

// rig is a running rlstore server and gateway, with a client.
type rig struct {
	srv    *server.Server
	svc    *gateway.Service
	gw     *gateway.Server
	client pb.RateLimitServiceClient
	conn   *grpc.ClientConn
	addr   string
	clock  *fakeClock
	dir    string
	dec    *server.Gateway
}

type rigOpts struct {
	opts      gateway.Options
	serverTLS *tls.Config
	clientTLS *tls.Config
	ready     func() error
	files     map[string]string
	wrap      func(batch.Decider) batch.Decider // what the service decides through, around the server's seam
	grpcGo    bool                              // --grpc-lean no
	dialOpts  []grpc.DialOption
}

// newRig starts a server on port 0 and the gateway on port 0 with files
// as its configuration folder.
func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	r := &rig{clock: newClock(t0), dir: t.TempDir()}
	for name, body := range o.files {
		writeFile(t, filepath.Join(r.dir, name), body)
	}
	store, err := shard.New(shard.Config{})
	require.NoError(t, err)
	srv, err := server.New(server.Config{Addr: "127.0.0.1:0", Store: store, Clock: r.clock.now, Logger: quiet()})
	require.NoError(t, err)
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ready) }()
	<-ready
	r.srv = srv
	t.Cleanup(func() { _ = srv.Close(); <-done })
	o.opts.Clock = r.clock.now
	r.dec = srv.Gateway(8)
	t.Cleanup(func() { _ = r.dec.Close() })
	var d batch.Decider = r.dec
	if o.wrap != nil {
		d = o.wrap(d)
	}
	r.svc = gateway.NewService(d, o.opts)
	if len(o.files) > 0 {
		require.NoError(t, r.svc.Load(r.dir))
	}
	if o.ready == nil {
		o.ready = srv.Ready
	}
	r.gw = gateway.NewServer(gateway.ServerConfig{Service: r.svc, TLS: o.serverTLS, Ready: o.ready, Logger: quiet(), GRPCGoOnly: o.grpcGo})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	r.addr = ln.Addr().String()
	go func() { _ = r.gw.Serve(ln) }()
	t.Cleanup(r.gw.Stop)
	creds := insecure.NewCredentials()
	if o.clientTLS != nil {
		creds = credentials.NewTLS(o.clientTLS)
	}
	r.conn, err = grpc.NewClient(r.addr, append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, o.dialOpts...)...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.conn.Close() })
	r.client = pb.NewRateLimitServiceClient(r.conn)
	return r
}

// ask sends one request of the descriptors, each a list of key, value pairs.
func (r *rig) ask(t *testing.T, domain string, hits uint32, descs ...[]string) *pb.RateLimitResponse {
	t.Helper()
	resp, err := r.call(domain, hits, descs...)
	require.NoError(t, err)
	return resp
}

func (r *rig) call(domain string, hits uint32, descs ...[]string) (*pb.RateLimitResponse, error) {
	req := &pb.RateLimitRequest{Domain: domain, HitsAddend: hits}
	for _, d := range descs {
		req.Descriptors = append(req.Descriptors, desc(d...))
	}
	return r.send(req)
}

func (r *rig) send(req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return r.client.ShouldRateLimit(ctx, req)
}

func desc(kv ...string) *pbstruct.RateLimitDescriptor {
	d := &pbstruct.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, entry(kv[i], kv[i+1]))
	}
	return d
}

func withHits(d *pbstruct.RateLimitDescriptor, h uint64) *pbstruct.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(h)
	return d
}

// codesOf are the overall code and each descriptor's, for compact checks.
func codesOf(resp *pb.RateLimitResponse) []string {
	out := []string{resp.GetOverallCode().String()}
	for _, s := range resp.GetStatuses() {
		out = append(out, s.GetCode().String())
	}
	return out
}

func remaining(resp *pb.RateLimitResponse) []uint32 {
	var out []uint32
	for _, s := range resp.GetStatuses() {
		out = append(out, s.GetLimitRemaining())
	}
	return out
}

func globalShadow() gateway.Options { return gateway.Options{GlobalShadowMode: true} }
