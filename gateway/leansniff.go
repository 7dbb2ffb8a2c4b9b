package gateway

import (
	"bytes"
	"errors"
	"io"
	"net"
	"strings"
	"sync"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

const clientPreface = http2.ClientPreface

// The paths the lean connection loop serves.
const (
	pathShouldRateLimit = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"
	pathHealthCheck     = "/grpc.health.v1.Health/Check"
)

// sniffed is what sniff read of a connection: every byte, to replay.
type sniffed struct {
	read []byte
}

// recorder keeps every byte read through it, up to leanSniffBytes.
type recorder struct {
	r   io.Reader
	buf []byte
}

var errSniffTooLong = errors.New("gateway: first call's headers too long to sniff")

func (r *recorder) Read(p []byte) (int, error) {
	if len(r.buf) >= leanSniffBytes {
		return 0, errSniffTooLong
	}
	p = p[:min(len(p), leanSniffBytes-len(r.buf))]
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	return n, err
}

// emptySettings is a SETTINGS frame of no settings: sent while sniffing, it
// lets a client that waits for the server's preface (grpc-go's does)
// send its first call, and changes nothing if grpc-go then takes the
// connection and sends its own.
var emptySettings = [9]byte{0, 0, 0, byte(http2.FrameSettings), 0, 0, 0, 0, 0}

// sniff reads nc's preface and frames up to the end of its first call's
// headers, and reports whether the lean loop serves that call. Any frame
// or header it does not expect there, any error, sends the connection to
// grpc-go, which answers it as it always has.
func sniff(nc net.Conn) (sniffed, bool) {
	rec := &recorder{r: nc}
	var pre [len(clientPreface)]byte
	if _, err := io.ReadFull(rec, pre[:]); err != nil || string(pre[:]) != clientPreface {
		return sniffed{read: rec.buf}, false
	}
	if _, err := nc.Write(emptySettings[:]); err != nil {
		return sniffed{read: rec.buf}, false
	}
	fr := http2.NewFramer(nil, rec)
	fr.SetMaxReadFrameSize(leanMaxFrame)
	var h reqHeaders
	dec := hpack.NewDecoder(4096, h.field)
	dec.SetMaxStringLength(leanMaxHeaderList)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return sniffed{read: rec.buf}, false
		}
		switch f := f.(type) {
		case *http2.SettingsFrame, *http2.WindowUpdateFrame, *http2.PingFrame, *http2.PriorityFrame:
			continue
		case *http2.HeadersFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				return sniffed{read: rec.buf}, false
			}
			if !f.HeadersEnded() {
				continue
			}
		case *http2.ContinuationFrame:
			if _, err := dec.Write(f.HeaderBlockFragment()); err != nil {
				return sniffed{read: rec.buf}, false
			}
			if !f.HeadersEnded() {
				continue
			}
		default:
			return sniffed{read: rec.buf}, false
		}
		if dec.Close() != nil {
			return sniffed{read: rec.buf}, false
		}
		return sniffed{read: rec.buf}, h.lean()
	}
}

// protoContentType reports whether v is gRPC with protobuf messages.
func protoContentType(v string) bool {
	rest, ok := strings.CutPrefix(v, "application/grpc")
	if !ok {
		return false
	}
	return rest == "" || rest == "+proto" || strings.HasPrefix(rest, ";") || strings.HasPrefix(rest, "+proto;")
}

// replayConn is a connection whose first reads return bytes already read.
type replayConn struct {
	net.Conn
	replay []byte
}

func (c *replayConn) Read(p []byte) (int, error) {
	if len(c.replay) > 0 {
		n := copy(p, c.replay)
		c.replay = c.replay[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// connListener is the listener grpc-go serves: it accepts the
// connections sniff handed over.
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newConnListener() *connListener {
	return &connListener{addr: &net.TCPAddr{}, conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *connListener) push(c net.Conn) {
	select {
	case l.conns <- c:
	case <-l.done:
		_ = c.Close()
	}
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) close() { l.once.Do(func() { close(l.done) }) }

// Close implements net.Listener.
func (l *connListener) Close() error { l.close(); return nil }

// Addr implements net.Listener.
func (l *connListener) Addr() net.Addr { return l.addr }

// readerOf is the bytes left of a sniff, then nc.
func readerOf(left []byte, nc net.Conn) io.Reader {
	if len(left) == 0 {
		return nc
	}
	return io.MultiReader(bytes.NewReader(left), nc)
}
