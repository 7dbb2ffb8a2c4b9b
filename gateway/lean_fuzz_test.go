package gateway

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"

	"github.com/rlstore/rlstore/gateway/batch"
	"github.com/rlstore/rlstore/gateway/rlsconfig"
)

// allowAll is a store that admits everything.
type allowAll struct{}

func (allowAll) Decide(_ context.Context, reqs []batch.Request, out []batch.Result) error {
	for i, r := range reqs {
		out[i] = batch.Result{Allowed: true, Count: r.Hits, Remaining: r.Limit - r.Hits}
	}
	return nil
}

// pipeConn is a connection that reads nothing and keeps what is written, up to a bound.
type pipeConn struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *pipeConn) Read([]byte) (int, error) { return 0, io.EOF }
func (c *pipeConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out.Len() < 8<<20 {
		c.out.Write(p)
	}
	return len(p), nil
}
func (c *pipeConn) Close() error                     { return nil }
func (c *pipeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *pipeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// fuzzSeed is a connection's frames after the preface: settings, a
// ShouldRateLimit call in two DATA frames, a health check, a ping.
func fuzzSeed(t testing.TB) []byte {
	var b, hb bytes.Buffer
	fr := http2.NewFramer(&b, nil)
	enc := hpack.NewEncoder(&hb)
	block := func(path string, extra ...string) []byte {
		hb.Reset()
		fs := append([]string{":method", "POST", ":scheme", "http", ":path", path, "content-type", "application/grpc", "grpc-timeout", "5S"}, extra...)
		for i := 0; i+1 < len(fs); i += 2 {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: fs[i], Value: fs[i+1]}))
		}
		return append([]byte(nil), hb.Bytes()...)
	}
	msg := func(m proto.Message) []byte {
		p, err := proto.Marshal(m)
		require.NoError(t, err)
		out := make([]byte, 5, 5+len(p))
		binary.BigEndian.PutUint32(out[1:], uint32(len(p)))
		return append(out, p...)
	}
	require.NoError(t, fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 7}))
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(pathShouldRateLimit), EndHeaders: true}))
	req := msg(&pb.RateLimitRequest{Domain: "d", Descriptors: []*pbstruct.RateLimitDescriptor{{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
	require.NoError(t, fr.WriteData(1, false, req[:3]))
	require.NoError(t, fr.WriteData(1, true, req[3:]))
	require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: block(pathHealthCheck), EndHeaders: true}))
	require.NoError(t, fr.WriteData(3, true, msg(&pb.RateLimitRequest{})))
	require.NoError(t, fr.WritePing(false, [8]byte{7}))
	require.NoError(t, fr.WriteWindowUpdate(0, 100))
	require.NoError(t, fr.WriteWindowUpdate(1, 100))
	require.NoError(t, fr.WriteRSTStream(3, http2.ErrCodeCancel))
	return b.Bytes()
}

// FuzzLeanConn runs the lean connection loop on arbitrary frames: it must
// not crash or hang, it must hold no more than its window of request
// bytes, and everything it writes must be well-formed HTTP/2 whose
// header blocks decode.
func FuzzLeanConn(f *testing.F) {
	cfg, err := rlsconfig.Load([]rlsconfig.Source{{Name: "d.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")}})
	require.NoError(f, err)
	svc := NewService(allowAll{}, Options{})
	svc.SetConfig(cfg)
	l := newLean(ServerConfig{Service: svc, MaxRecvBytes: 4096}, &health{ready: func() error { return nil }}, newConnListener())
	seed := fuzzSeed(f)
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add(append(append([]byte(nil), seed...), 0, 0x40, 0, 0, 0, 0, 0, 0, 1))
	f.Fuzz(func(t *testing.T, in []byte) {
		pc := &pipeConn{}
		c := newLeanConn(l, pc, in)
		c.serve()
		c.calls.Wait()
		c.mu.Lock()
		held := c.inFlight
		c.mu.Unlock()
		require.LessOrEqual(t, held, int64(c.window))
		// A write under way ends once the connection is closed.
		c.mu.Lock()
		for c.writing {
			c.cond.Wait()
		}
		c.mu.Unlock()
		pc.mu.Lock()
		out := append([]byte(nil), pc.out.Bytes()...)
		pc.mu.Unlock()
		checkFrames(t, out)
	})
}

// checkFrames reads b as HTTP/2 frames from a server.
func checkFrames(t *testing.T, b []byte) {
	fr := http2.NewFramer(nil, bytes.NewReader(b))
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.SetMaxReadFrameSize(16 << 10)
	for {
		_, err := fr.ReadFrame()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
	}
}

// TestLeanConnSeed checks FuzzLeanConn's seed does what it says: its
// call is answered, within the peer's window of 7 bytes and then 107.
// The health check on stream 3 is reset by the peer after its request, so
// it may be answered or not, depending on which the loop sees first.
func TestLeanConnSeed(t *testing.T) {
	cfg, err := rlsconfig.Load([]rlsconfig.Source{{Name: "d.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")}})
	require.NoError(t, err)
	svc := NewService(allowAll{}, Options{})
	svc.SetConfig(cfg)
	l := newLean(ServerConfig{Service: svc, MaxRecvBytes: 4096}, &health{ready: func() error { return nil }}, newConnListener())
	pr, pw := net.Pipe()
	defer pw.Close()
	c := newLeanConn(l, pr, fuzzSeed(t))
	go c.serve()
	fr := http2.NewFramer(nil, pw)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	got := map[uint32]string{}
	var data []byte
	for got[1] == "" {
		require.NoError(t, pw.SetReadDeadline(time.Now().Add(20*time.Second)))
		f, err := fr.ReadFrame()
		require.NoError(t, err)
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if v := f.PseudoValue("status"); v == "" || f.StreamEnded() {
				for _, h := range f.RegularFields() {
					if h.Name == "grpc-status" {
						got[f.StreamID] = h.Value
					}
				}
			}
		case *http2.DataFrame:
			require.LessOrEqual(t, len(f.Data()), 107, "the peer's window")
			if f.StreamID == 1 {
				data = append(data, f.Data()...)
			}
		}
	}
	require.Equal(t, "0", got[1], "ShouldRateLimit OK")
	if s, ok := got[3]; ok {
		require.Equal(t, "0", s, "a health check answered before its reset was seen")
	}
	var resp pb.RateLimitResponse
	require.NoError(t, proto.Unmarshal(data[5:], &resp))
	require.Equal(t, pb.RateLimitResponse_OK, resp.OverallCode)
}
