package gateway_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding/gzip"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/gateway/batch"
)

// TestLeanServesShouldRateLimit checks that a go-control-plane client's
// connection, whose first call is ShouldRateLimit, is served by the lean
// loop, and that its calls are decided as before.
func TestLeanServesShouldRateLimit(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	for want := uint32(2); want > 0; want-- {
		assert.Equal(t, []uint32{want}, remaining(r.ask(t, "api", 0, []string{"remote_address", "a"})))
	}
	served, handed := gateway.LeanCounts(r.gw)
	assert.Equal(t, int64(1), served)
	assert.Equal(t, int64(0), handed)
}

// TestLeanFallback checks what the lean loop leaves to grpc-go: a
// connection whose first call is reflection, or a compressed call, is
// served by grpc-go as before; a lean connection answers other methods
// UNIMPLEMENTED (docs/gateway.md).
func TestLeanFallback(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	listServices(t, r.conn)
	resp := r.ask(t, "api", 0, []string{"remote_address", "a"})
	assert.Equal(t, []uint32{2}, remaining(resp), "ShouldRateLimit through grpc-go on the same connection")
	served, handed := gateway.LeanCounts(r.gw)
	assert.Equal(t, [2]int64{0, 1}, [2]int64{served, handed}, "served, handed")

	gz := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, dialOpts: []grpc.DialOption{grpc.WithDefaultCallOptions(grpc.UseCompressor(gzip.Name))}})
	assert.Equal(t, []uint32{2}, remaining(gz.ask(t, "api", 0, []string{"remote_address", "a"})))
	served, handed = gateway.LeanCounts(gz.gw)
	assert.Equal(t, [2]int64{0, 1}, [2]int64{served, handed}, "a compressed first call goes to grpc-go")

	lean := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	lean.ask(t, "api", 0, []string{"remote_address", "a"})
	stream, err := reflectpb.NewServerReflectionClient(lean.conn).ServerReflectionInfo(context.Background())
	require.NoError(t, err)
	_ = stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}})
	_, err = stream.Recv()
	assert.Equal(t, codes.Unimplemented, status.Code(err), "%v", err)
	_, err = lean.client.ShouldRateLimit(context.Background(), &pb.RateLimitRequest{Domain: "api"}, grpc.UseCompressor(gzip.Name))
	assert.Equal(t, codes.Unimplemented, status.Code(err), "a compressed call on a lean connection: %v", err)

	off := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, grpcGo: true})
	off.ask(t, "api", 0, []string{"remote_address", "a"})
	listServices(t, off.conn)
	served, handed = gateway.LeanCounts(off.gw)
	assert.Equal(t, [2]int64{0, 0}, [2]int64{served, handed}, "--grpc-lean no")
}

func listServices(t *testing.T, cc *grpc.ClientConn) {
	t.Helper()
	stream, err := reflectpb.NewServerReflectionClient(cc).ServerReflectionInfo(context.Background())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	assert.NotEmpty(t, resp.GetListServicesResponse().GetService())
}

// TestLeanTLS checks TLS (ALPN h2, a client certificate required) on the
// lean loop and on grpc-go behind it, and that a client without ALPN is
// refused as grpc-go refuses it.
func TestLeanTLS(t *testing.T) {
	pool, leaf := testCA(t)
	srvTLS := &tls.Config{Certificates: []tls.Certificate{leaf(false)}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	good := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{leaf(true)}, MinVersion: tls.VersionTLS12}
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, serverTLS: srvTLS, clientTLS: good})
	assert.Equal(t, []uint32{2}, remaining(r.ask(t, "api", 0, []string{"remote_address", "a"})))
	h, err := healthpb.NewHealthClient(r.conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, h.Status)

	fb := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, serverTLS: srvTLS, clientTLS: good})
	listServices(t, fb.conn)
	served, handed := gateway.LeanCounts(r.gw)
	assert.Equal(t, [2]int64{1, 0}, [2]int64{served, handed})
	served, handed = gateway.LeanCounts(fb.gw)
	assert.Equal(t, [2]int64{0, 1}, [2]int64{served, handed})

	// Certificates reloaded on change come from GetConfigForClient, whose
	// configurations must offer h2 too (cmd/rlstore's do).
	inner := srvTLS.Clone()
	perClient := &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) { return inner, nil }}
	rc := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, serverTLS: perClient, clientTLS: good})
	assert.Equal(t, []uint32{2}, remaining(rc.ask(t, "api", 0, []string{"remote_address", "a"})))

	nc, err := tls.Dial("tcp", r.addr, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{leaf(true)}, MinVersion: tls.VersionTLS12})
	require.NoError(t, err, "the handshake itself succeeds")
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = nc.Read(make([]byte, 1))
	assert.Error(t, err, "no ALPN h2: closed")
	_ = nc.Close()
}

// TestLeanFlowControl checks flow control both ways: a request larger
// than the default window, one past --grpc-max-recv, many calls at once,
// and a peer whose window is one byte.
func TestLeanFlowControl(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	resp := r.ask(t, "api", 0, []string{"other", strings.Repeat("v", 300<<10)})
	assert.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
	_, err := r.call("api", 0, []string{"other", strings.Repeat("v", gateway.DefaultMaxRecvBytes)})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err), "%v", err)

	var wg sync.WaitGroup
	errs := make(chan error, 64*20)
	for g := 0; g < 64; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := r.call("api", 0, []string{"other", strings.Repeat("x", 1000*g)}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	served, _ := gateway.LeanCounts(r.gw)
	assert.Equal(t, int64(1), served)

	c := dialH2(t, r.addr, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1})
	c.headers(3, pathRLS, false)
	c.data(3, rlsBody(t, "api", "remote_address", "b"), true)
	a := c.answer(3)
	require.Equal(t, "0", a.status, "%+v", a)
	var got pb.RateLimitResponse
	require.Greater(t, len(a.data), 5)
	require.NoError(t, proto.Unmarshal(a.data[5:], &got))
	assert.Equal(t, []uint32{2}, remaining(&got), "an answer sent a byte at a time")
}

// TestLeanHostilePeer checks a peer that breaks the protocol: each gets
// GOAWAY with HTTP/2's code for what it did, or its stream refused, and
// the server goes on serving others.
func TestLeanHostilePeer(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	t.Run("oversized frame", func(t *testing.T) {
		c := dialH2(t, r.addr)
		c.headers(3, pathRLS, false)
		c.data(3, make([]byte, 20000), false)
		assert.Equal(t, http2.ErrCodeFrameSize, c.goAway())
	})
	t.Run("garbage", func(t *testing.T) {
		c := dialH2(t, r.addr)
		_, err := c.nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
		require.NoError(t, err)
		assert.Equal(t, http2.ErrCodeFrameSize, c.goAway())
	})
	t.Run("too many streams", func(t *testing.T) {
		c := dialH2(t, r.addr)
		id := uint32(3)
		for i := 0; i < 1024; i++ {
			c.headers(id, pathRLS, false)
			id += 2
		}
		c.headers(id, pathRLS, false)
		a := c.answer(id)
		assert.Equal(t, h2Answer{rst: http2.ErrCodeRefusedStream, reset: true}, a)
	})
	t.Run("header flood", func(t *testing.T) {
		c := dialH2(t, r.addr)
		var block bytes.Buffer
		enc := hpack.NewEncoder(&block)
		for block.Len() < 100<<10 {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: "x-pad", Value: strings.Repeat("p", 100), Sensitive: true}))
		}
		b := block.Bytes()
		require.NoError(t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: b[:16000]}))
		for b = b[16000:]; len(b) > 16000; b = b[16000:] {
			require.NoError(t, c.fr.WriteContinuation(3, false, b[:16000]))
		}
		assert.Equal(t, http2.ErrCodeEnhanceYourCalm, c.goAway())
	})
	t.Run("past the window", func(t *testing.T) {
		c := dialH2(t, r.addr)
		var flood bytes.Buffer
		fr := http2.NewFramer(&flood, nil)
		for id := uint32(3); id < 3+2*80; id += 2 {
			require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(pathRLS), EndHeaders: true}))
			require.NoError(t, fr.WriteData(id, false, make([]byte, 16000)))
		}
		_, _ = c.nc.Write(flood.Bytes()) // the server may stop reading before the end
		assert.Equal(t, http2.ErrCodeFlowControl, c.goAway())
	})
	t.Run("data on an idle stream", func(t *testing.T) {
		c := dialH2(t, r.addr)
		c.data(99, []byte{0, 0, 0, 0, 0}, true)
		assert.Equal(t, http2.ErrCodeProtocol, c.goAway())
	})
	t.Run("pings, never reading", func(t *testing.T) {
		c := dialH2(t, r.addr)
		var pings bytes.Buffer
		fr := http2.NewFramer(&pings, nil)
		for pings.Len() < 1<<20 {
			require.NoError(t, fr.WritePing(false, [8]byte{1}))
		}
		written := 0
		for written < 256<<20 {
			_ = c.nc.SetWriteDeadline(time.Now().Add(3 * time.Second))
			n, err := c.nc.Write(pings.Bytes())
			written += n
			if err != nil {
				var ne net.Error
				require.ErrorAs(t, err, &ne)
				require.True(t, ne.Timeout(), "%v", err)
				break
			}
		}
		assert.Less(t, written, 256<<20, "the server stopped reading a peer that does not read its answers")
	})
	assert.Equal(t, []uint32{2}, remaining(r.ask(t, "api", 0, []string{"remote_address", "a"})), "still serving")
}

// blocker is a decider that holds every batch whose first key has the
// value "block" until its call's context ends, and says when such a call
// started and how its context ended.
type blocker struct {
	batch.Decider
	started chan struct{}
	ended   chan error
}

func newBlocker() *blocker {
	return &blocker{started: make(chan struct{}, 16), ended: make(chan error, 16)}
}

func (b *blocker) wrap(d batch.Decider) batch.Decider {
	b.Decider = d
	return b
}

func (b *blocker) Decide(ctx context.Context, reqs []batch.Request, out []batch.Result) error {
	if !bytes.Contains(reqs[0].Key, []byte("=block")) {
		return b.Decider.Decide(ctx, reqs, out)
	}
	b.started <- struct{}{}
	<-ctx.Done()
	b.ended <- ctx.Err()
	return ctx.Err()
}

// wait waits, for a long while at most, for what ch brings.
func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: not within 20 s", what)
		panic("unreachable")
	}
}

// TestLeanResetCancels checks that a call's context ends when the peer
// resets its stream, also when the call has no grpc-timeout (as grpc-go
// cancels a handler's context on RST_STREAM): by hand, by grpc-go's
// client cancelling its call, and when the connection closes. The
// connection then goes on serving.
func TestLeanResetCancels(t *testing.T) {
	b := newBlocker()
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, wrap: b.wrap})
	c := dialH2(t, r.addr)
	c.headers(3, pathRLS, false)
	c.data(3, rlsBody(t, "api", "remote_address", "block"), true)
	wait(t, b.started, "the call started")
	require.NoError(t, c.fr.WriteRSTStream(3, http2.ErrCodeCancel))
	assert.ErrorIs(t, wait(t, b.ended, "the reset call ended"), context.Canceled)
	c.headers(5, pathRLS, false)
	c.data(5, rlsBody(t, "api", "remote_address", "10.0.0.2"), true)
	assert.Equal(t, "0", c.answer(5).status, "the connection serves on")

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{desc("remote_address", "block")}})
		errc <- err
	}()
	wait(t, b.started, "grpc-go's call started")
	cancel()
	assert.Equal(t, codes.Canceled, status.Code(wait(t, errc, "grpc-go's call returned")))
	assert.ErrorIs(t, wait(t, b.ended, "grpc-go's cancelled call ended"), context.Canceled)
	assert.Equal(t, []uint32{2}, remaining(r.ask(t, "api", 0, []string{"remote_address", "a"})))

	c.headers(7, pathRLS, false)
	c.data(7, rlsBody(t, "api", "remote_address", "block"), true)
	wait(t, b.started, "the third call started")
	require.NoError(t, c.nc.Close())
	assert.ErrorIs(t, wait(t, b.ended, "the call of a closed connection ended"), context.Canceled)
	served, _ := gateway.LeanCounts(r.gw)
	assert.Equal(t, int64(2), served)
}
