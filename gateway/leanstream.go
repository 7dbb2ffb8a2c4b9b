package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// leanStream is one call on a lean connection. The reader owns it while
// the request comes in, a worker while the call runs; the connection's mu
// guards the hand-over fields (state, reset, parkedNow, credit, sendWin).
type leanStream struct {
	c          *leanConn
	id         uint32
	method     int
	state      int
	remoteDone bool // the peer ended its side
	reset      bool // the peer reset it while its call ran: no answer
	parkedNow  bool // its answer waits for the peer's window
	timeout    time.Duration
	ctx        context.Context    // the call's: sctx, or with a grpc-timeout a deadline under the connection's
	cancel     context.CancelFunc // ends ctx when it has a deadline
	sctx       streamCtx
	buf        []byte // the request: the 5-byte prefix and the message
	out        []byte // the answer's DATA: prefix and message
	sent       int    // of out
	credit     int64  // received bytes to give back once answered
	recvd      int64  // flow-controlled bytes received
	sendWin    int64  // the peer's window for it
}

const (
	streamRecv = iota
	streamRunning
)

const (
	methodShouldRateLimit = iota + 1
	methodHealthCheck
)

// leanFree bounds a connection's stream free list; leanKeepBuf the buffers a freed stream keeps.
const (
	leanFree    = 64
	leanKeepBuf = 4 << 10
)

func (c *leanConn) newStreamLocked(id uint32) *leanStream {
	var st *leanStream
	if n := len(c.free); n > 0 {
		st, c.free = c.free[n-1], c.free[:n-1]
	} else {
		st = &leanStream{c: c}
	}
	st.id, st.sendWin = id, c.peerInitWin
	c.streams[id] = st
	return st
}

func (c *leanConn) releaseLocked(st *leanStream) {
	if c.streams[st.id] == st {
		delete(c.streams, st.id)
	}
	if st.parkedNow {
		for i, p := range c.parked {
			if p == st {
				c.parked = append(c.parked[:i], c.parked[i+1:]...)
				break
			}
		}
	}
	if st.cancel != nil {
		st.cancel()
	}
	done := st.sctx.reusable()
	buf, out := st.buf[:0], st.out[:0]
	if cap(buf) > leanKeepBuf {
		buf = nil
	}
	if cap(out) > leanKeepBuf {
		out = nil
	}
	*st = leanStream{c: c, buf: buf, out: out}
	st.sctx.done = done
	if len(c.free) < leanFree {
		c.free = append(c.free, st)
	}
	if c.goingAway {
		c.cond.Broadcast()
	}
}

// streamCtx is the context of a call without a deadline: it ends when
// the peer resets the stream or the connection closes. It lives in its
// stream and is reused with it, so that a call allocates no context; its
// channel is made anew only after it was closed.
type streamCtx struct {
	done     chan struct{} // set before the call starts; closed under the connection's mu
	canceled atomic.Bool
}

func (x *streamCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (x *streamCtx) Done() <-chan struct{}       { return x.done }
func (x *streamCtx) Value(any) any               { return nil }

func (x *streamCtx) Err() error {
	if x.canceled.Load() {
		return context.Canceled
	}
	return nil
}

// startLocked readies it for a call.
func (x *streamCtx) startLocked() {
	if x.done == nil {
		x.done = make(chan struct{})
	}
}

// cancelLocked ends it, once.
func (x *streamCtx) cancelLocked() {
	if x.done != nil && !x.canceled.Load() {
		x.canceled.Store(true)
		close(x.done)
	}
}

// reusable is its channel for the stream's next call: the same while it never closed.
func (x *streamCtx) reusable() chan struct{} {
	if x.canceled.Load() {
		return nil
	}
	return x.done
}

// run runs st's call and writes its answer.
func (c *leanConn) run(st *leanStream) {
	defer c.calls.Done()
	err := c.call(st)
	c.mu.Lock()
	c.giveBackLocked(st.credit)
	st.credit = 0
	switch {
	case st.reset || c.dead:
		c.releaseLocked(st)
	case err != nil:
		c.writeStatusLocked(st, errStatus(err), true)
		c.releaseLocked(st)
	default:
		c.writeHeadersLocked(st.id, c.l.blocks.headers, false)
		if c.sendLocked(st) {
			c.releaseLocked(st)
		}
	}
	inline := c.kickLocked(true)
	c.mu.Unlock()
	if inline {
		c.flush()
	}
}

// call decides st's request and leaves the answer in st.out.
func (c *leanConn) call(st *leanStream) error {
	b := st.buf[5:]
	switch st.method {
	case methodShouldRateLimit:
		req := new(pb.RateLimitRequest)
		if !decodeRequest(b, req) {
			req = new(pb.RateLimitRequest)
			if err := proto.Unmarshal(b, req); err != nil {
				return status.Error(codes.Internal, "grpc: error unmarshalling request: "+err.Error())
			}
		}
		var err error
		st.out, err = c.l.svc.appendShouldRateLimit(st.out[:0], st.ctx, req)
		return err
	case methodHealthCheck:
		req := new(healthpb.HealthCheckRequest)
		if err := proto.Unmarshal(b, req); err != nil {
			return status.Error(codes.Internal, "grpc: error unmarshalling request: "+err.Error())
		}
		r, err := c.l.health.Check(st.ctx, req)
		if err != nil {
			return err
		}
		st.out, err = appendGRPCMessage(st.out[:0], r)
		return err
	}
	return nil
}

// appendGRPCMessage appends m as one gRPC message: the 5-byte prefix,
// then protobuf, written by the gateway's codec where it can.
func appendGRPCMessage(b []byte, m proto.Message) ([]byte, error) {
	if r, ok := m.(*pb.RateLimitResponse); ok && plainResponse(r) {
		return appendResponse(appendMessage5(b, sizeResponse(r)), r), nil
	}
	at := len(b)
	out, err := proto.MarshalOptions{}.MarshalAppend(append(b, 0, 0, 0, 0, 0), m)
	if err != nil {
		return b, status.Error(codes.Internal, "grpc: error while marshaling: "+err.Error())
	}
	n := len(out) - at - 5
	out[at+1], out[at+2], out[at+3], out[at+4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return out, nil
}

// appendMessage5 is gRPC's message prefix: not compressed, n bytes.
func appendMessage5(b []byte, n int) []byte {
	return append(b, 0, byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
}

// errStatus is the status grpc-go answers for a handler's error.
func errStatus(err error) *status.Status {
	s, ok := status.FromError(err)
	if !ok {
		s = status.FromContextError(err)
	}
	if s.Code() == codes.OK {
		return status.New(codes.Unknown, err.Error())
	}
	return s
}

func errTooLarge(n, limit int) string {
	return "grpc: received message larger than max (" + strconv.Itoa(n) + " vs. " + strconv.Itoa(limit) + ")"
}

// sendLocked writes what the windows let of st's answer and, once all of
// it is out, its trailers; it reports whether the answer is complete.
func (c *leanConn) sendLocked(st *leanStream) bool {
	for st.sent < len(st.out) {
		n := int(min(int64(min(len(st.out)-st.sent, c.peerMaxFrame)), c.sendWin, st.sendWin))
		if n <= 0 {
			if !st.parkedNow {
				st.parkedNow = true
				c.parked = append(c.parked, st)
			}
			return false
		}
		_ = c.wf.WriteData(st.id, false, st.out[st.sent:st.sent+n])
		st.sent += n
		c.sendWin -= int64(n)
		st.sendWin -= int64(n)
	}
	c.writeHeadersLocked(st.id, c.l.blocks.ok, true)
	return true
}

// sendParkedLocked goes on with the answers that waited for a window.
func (c *leanConn) sendParkedLocked() {
	if len(c.parked) == 0 {
		return
	}
	parked := append([]*leanStream(nil), c.parked...)
	for _, st := range parked {
		if c.sendLocked(st) {
			c.releaseLocked(st)
		}
	}
}

// writeHeadersLocked writes a header block, in CONTINUATIONs past the peer's frame size.
func (c *leanConn) writeHeadersLocked(id uint32, block []byte, end bool) {
	if c.tableUpdate {
		c.hbuf = append(append(c.hbuf[:0], 0x20), block...) // a dynamic table size update to 0
		block, c.tableUpdate = c.hbuf, false
	}
	first := true
	for {
		n := min(len(block), c.peerMaxFrame)
		frag, rest := block[:n], block[n:]
		if first {
			_ = c.wf.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: frag, EndStream: end, EndHeaders: len(rest) == 0})
		} else {
			_ = c.wf.WriteContinuation(id, len(rest) == 0, frag)
		}
		if first = false; len(rest) == 0 {
			return
		}
		block = rest
	}
}

// writeStatusLocked writes a status as trailers, or as a trailers-only answer.
func (c *leanConn) writeStatusLocked(st *leanStream, s *status.Status, only bool) {
	block := c.l.blocks.status(s, only)
	c.writeHeadersLocked(st.id, block, true)
}

// leanBlocks are the answers' header blocks. They never use HPACK's
// dynamic table, so they are the same on every connection: the common
// ones are encoded once.
type leanBlocks struct {
	headers, ok []byte
}

func newLeanBlocks() leanBlocks {
	return leanBlocks{
		headers: encodeBlock(hpack.HeaderField{Name: ":status", Value: "200"}, hpack.HeaderField{Name: "content-type", Value: "application/grpc"}),
		ok:      encodeBlock(hpack.HeaderField{Name: "grpc-status", Value: "0"}),
	}
}

// status is the block of a status: trailers, or with only, the whole
// answer. As grpc-go's, it carries grpc-status-details-bin when the
// status has details (no error of the service has any today).
func (b leanBlocks) status(s *status.Status, only bool) []byte {
	fs := make([]hpack.HeaderField, 0, 5)
	if only {
		fs = append(fs, hpack.HeaderField{Name: ":status", Value: "200"}, hpack.HeaderField{Name: "content-type", Value: "application/grpc"})
	}
	fs = append(fs, hpack.HeaderField{Name: "grpc-status", Value: strconv.Itoa(int(s.Code()))})
	if msg := s.Message(); msg != "" {
		fs = append(fs, hpack.HeaderField{Name: "grpc-message", Value: percentEncode(msg)})
	}
	if p := s.Proto(); len(p.GetDetails()) > 0 {
		if bin, err := proto.Marshal(p); err == nil {
			fs = append(fs, hpack.HeaderField{Name: "grpc-status-details-bin", Value: base64.RawStdEncoding.EncodeToString(bin)})
		}
	}
	return encodeBlock(fs...)
}

// encodeBlock encodes fields without indexing (Sensitive), so that the
// encoder's dynamic table stays empty.
func encodeBlock(fs ...hpack.HeaderField) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range fs {
		f.Sensitive = true
		_ = enc.WriteField(f)
	}
	return buf.Bytes()
}

// percentEncode is gRPC's encoding of grpc-message.
func percentEncode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c <= '~' && c != '%' {
			b.WriteByte(c)
			continue
		}
		const hex = "0123456789ABCDEF"
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// reqHeaders is what the lean loop reads of a request's headers.
type reqHeaders struct {
	path, method, contentType, encoding string
	timeout                             time.Duration
	badTimeout                          bool
	other                               bool // a pseudo-header other than a request's
	trailers                            bool // the block is trailers of an open stream
}

func (h *reqHeaders) field(f hpack.HeaderField) {
	switch f.Name {
	case ":path":
		h.path = f.Value
	case ":method":
		h.method = f.Value
	case "content-type":
		h.contentType = f.Value
	case "grpc-encoding":
		h.encoding = f.Value
	case "grpc-timeout":
		d, err := parseTimeout(f.Value)
		h.timeout, h.badTimeout = d, err != nil
	case ":scheme", ":authority":
	default:
		h.other = h.other || strings.HasPrefix(f.Name, ":")
	}
}

// lean reports whether the lean loop serves a connection whose first call has these headers.
func (h *reqHeaders) lean() bool {
	return (h.path == pathShouldRateLimit || h.path == pathHealthCheck) && h.method == "POST" && !h.other &&
		!h.badTimeout && protoContentType(h.contentType) && (h.encoding == "" || h.encoding == "identity")
}

var errTimeout = errors.New("gateway: malformed grpc-timeout")

// parseTimeout reads grpc-timeout: at most 8 digits and a unit.
func parseTimeout(v string) (time.Duration, error) {
	if len(v) < 2 || len(v) > 9 {
		return 0, errTimeout
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, errTimeout
	}
	var unit time.Duration
	switch v[len(v)-1] {
	case 'H':
		unit = time.Hour
	case 'M':
		unit = time.Minute
	case 'S':
		unit = time.Second
	case 'm':
		unit = time.Millisecond
	case 'u':
		unit = time.Microsecond
	case 'n':
		unit = time.Nanosecond
	default:
		return 0, errTimeout
	}
	return time.Duration(n) * unit, nil
}
