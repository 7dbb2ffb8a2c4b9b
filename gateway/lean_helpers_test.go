package gateway_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
)

// h2 is a hand-driven HTTP/2 client, for what a gRPC client never does.
type h2 struct {
	t   *testing.T
	nc  net.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	hb  bytes.Buffer
	dec *hpack.Decoder
}

// dialH2 connects, sends the preface and settings, and makes a first
// ShouldRateLimit call on stream 1, so that the lean loop serves the
// connection.
func dialH2(t *testing.T, addr string, settings ...http2.Setting) *h2 {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	c := &h2{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.enc = hpack.NewEncoder(&c.hb)
	c.dec = hpack.NewDecoder(4096, nil)
	c.fr.ReadMetaHeaders = c.dec
	c.fr.SetMaxReadFrameSize(1 << 20)
	_, err = nc.Write([]byte(http2.ClientPreface))
	require.NoError(t, err)
	require.NoError(t, c.fr.WriteSettings(settings...))
	c.headers(1, pathRLS, false)
	c.data(1, rlsBody(t, "api", "remote_address", "10.0.0.1"), true)
	got := c.answer(1)
	require.Equal(t, "0", got.status, "first call: %+v", got)
	return c
}

const pathRLS = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"

func (c *h2) headers(id uint32, path string, end bool) {
	c.t.Helper()
	require.NoError(c.t, c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(path), EndHeaders: true, EndStream: end}))
}

// block is a call's header block.
func (c *h2) block(path string) []byte {
	c.hb.Reset()
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", "x"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		require.NoError(c.t, c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]}))
	}
	return c.hb.Bytes()
}

func (c *h2) data(id uint32, b []byte, end bool) {
	c.t.Helper()
	require.NoError(c.t, c.fr.WriteData(id, end, b))
}

// rlsBody is a gRPC message of a ShouldRateLimit request of one descriptor entry.
func rlsBody(t *testing.T, domain, k, v string) []byte {
	m, err := proto.Marshal(&pb.RateLimitRequest{Domain: domain, Descriptors: []*pbstruct.RateLimitDescriptor{desc(k, v)}})
	require.NoError(t, err)
	return grpcFrame(m)
}

func grpcFrame(m []byte) []byte {
	b := make([]byte, 5, 5+len(m))
	binary.BigEndian.PutUint32(b[1:], uint32(len(m)))
	return append(b, m...)
}

// h2Answer is what came back on a stream.
type h2Answer struct {
	status, message string
	data            []byte
	rst             http2.ErrCode
	reset           bool
	details         bool // grpc-status-details-bin came
}

// answer reads frames until stream id ends; it gives back every DATA
// byte it reads, so that windows never stall.
func (c *h2) answer(id uint32) h2Answer {
	c.t.Helper()
	var a h2Answer
	for {
		f := c.read()
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID != id {
				continue
			}
			for _, h := range f.Fields {
				switch h.Name {
				case "grpc-status":
					a.status = h.Value
				case "grpc-message":
					a.message = h.Value
				case "grpc-status-details-bin":
					a.details = true
				}
			}
			if f.StreamEnded() {
				return a
			}
		case *http2.DataFrame:
			if n := len(f.Data()); n > 0 {
				require.NoError(c.t, c.fr.WriteWindowUpdate(0, uint32(n)))
				require.NoError(c.t, c.fr.WriteWindowUpdate(f.StreamID, uint32(n)))
			}
			if f.StreamID == id {
				a.data = append(a.data, f.Data()...)
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				a.rst, a.reset = f.ErrCode, true
				return a
			}
		case *http2.GoAwayFrame:
			c.t.Fatalf("GOAWAY %v while waiting for stream %d", f.ErrCode, id)
		}
	}
}

// read reads a frame, failing the test after a long while.
func (c *h2) read() http2.Frame {
	c.t.Helper()
	require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(20*time.Second)))
	f, err := c.fr.ReadFrame()
	require.NoError(c.t, err)
	return f
}

// goAway reads until GOAWAY and returns its code; the connection must then close.
func (c *h2) goAway() http2.ErrCode {
	c.t.Helper()
	for {
		require.NoError(c.t, c.nc.SetReadDeadline(time.Now().Add(20*time.Second)))
		f, err := c.fr.ReadFrame()
		require.NoError(c.t, err, "no GOAWAY before the connection ended")
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return g.ErrCode
		}
	}
}
