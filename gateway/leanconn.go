package gateway

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// leanConn is one HTTP/2 connection served by the lean loop. One
// goroutine (serve) reads frames and never blocks on the peer's reading;
// calls run on the server's workers, each writing its own answer into the
// connection's output buffer, and whoever finds no write under way writes
// the buffer out (a worker in line, the reader on a goroutine of its own).
//
// What a peer can make it hold is bounded: the request bytes received and
// not yet answered by the receive window (one request of the largest
// size), the streams by SETTINGS_MAX_CONCURRENT_STREAMS (counting calls
// the peer reset but that still run), a header block by leanMaxHeaderList,
// and the output by leanMaxOut (past it, reading stops until the peer
// reads).
type leanConn struct {
	l      *lean
	nc     net.Conn
	fr     *http2.Framer // reads; only serve uses it
	dec    *hpack.Decoder
	ctx    context.Context // ends when the connection closes
	cancel context.CancelFunc
	window uint32 // our receive window, connection and stream
	calls  sync.WaitGroup
	once   sync.Once
	ager   *time.Timer

	// The header block being read (serve only).
	hdr      reqHeaders
	hdrID    uint32
	hdrEnd   bool // the HEADERS frame ended the stream
	hdrBytes int

	mu           sync.Mutex // guards the fields below and every leanStream's shared fields
	cond         *sync.Cond // on mu: output written, a stream released, the connection closed
	streams      map[uint32]*leanStream
	free         []*leanStream
	lastID       uint32 // the highest stream the peer opened
	out, spare   []byte
	wf           *http2.Framer // writes into out
	hbuf         []byte        // an answer's header block
	writing      bool
	dead         bool
	goingAway    bool
	sendWin      int64 // the peer's connection window
	peerInitWin  int64 // its SETTINGS_INITIAL_WINDOW_SIZE
	peerMaxFrame int
	inFlight     int64  // bytes received and not yet given back
	unacked      uint32 // bytes given back and not yet in a WINDOW_UPDATE
	parked       []*leanStream
	tableUpdate  bool // the next header block starts with a table size update to 0
}

// outWriter appends the write framer's frames to the output buffer.
type outWriter struct{ c *leanConn }

func (w outWriter) Write(p []byte) (int, error) {
	w.c.out = append(w.c.out, p...)
	return len(p), nil
}

func newLeanConn(l *lean, nc net.Conn, left []byte) *leanConn {
	c := &leanConn{l: l, nc: nc, window: l.window(), streams: make(map[uint32]*leanStream),
		sendWin: 65535, peerInitWin: 65535, peerMaxFrame: 16384}
	c.cond = sync.NewCond(&c.mu)
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.fr = http2.NewFramer(nil, bufio.NewReaderSize(readerOf(left, nc), 32<<10))
	c.fr.SetMaxReadFrameSize(leanMaxFrame)
	c.fr.SetReuseFrames()
	c.wf = http2.NewFramer(outWriter{c}, nil)
	c.dec = hpack.NewDecoder(4096, c.hdr.field)
	c.dec.SetMaxStringLength(leanMaxHeaderList)
	return c
}

// connError is an HTTP/2 connection error: GOAWAY with its code, then close.
type connError struct {
	code http2.ErrCode
	why  string
}

func (e connError) Error() string { return "gateway: http2: " + e.code.String() + ": " + e.why }

// serve reads frames until the connection ends.
func (c *leanConn) serve() {
	defer c.close()
	c.mu.Lock()
	_ = c.wf.WriteSettings(
		http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: leanMaxStreams},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: c.window},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: leanMaxHeaderList})
	_ = c.wf.WriteWindowUpdate(0, c.window-65535)
	c.kickLocked(false)
	c.mu.Unlock()
	if c.l.age > 0 {
		c.ager = time.AfterFunc(c.l.age, c.ageOut)
	}
	for c.waitOut() {
		f, err := c.fr.ReadFrame()
		if err == nil {
			err = c.frame(f)
		}
		if err != nil && !c.readError(err) {
			return
		}
	}
}

// ageOut is grpc-go's MaxConnectionAge: GOAWAY, then close after the grace.
func (c *leanConn) ageOut() {
	ctx, cancel := context.WithTimeout(context.Background(), c.l.grace)
	defer cancel()
	c.drain(ctx)
	c.close()
}

// readError answers err and reports whether reading goes on.
func (c *leanConn) readError(err error) bool {
	var se http2.StreamError
	var ce http2.ConnectionError
	var le connError
	switch {
	case errors.As(err, &se):
		c.mu.Lock()
		c.resetLocked(se.StreamID, se.Code)
		c.mu.Unlock()
		return true
	case errors.Is(err, http2.ErrFrameTooLarge):
		c.goAway(http2.ErrCodeFrameSize)
	case errors.As(err, &ce):
		c.goAway(http2.ErrCode(ce))
	case errors.As(err, &le):
		c.goAway(le.code)
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
	default:
		c.goAway(http2.ErrCodeProtocol)
	}
	return false
}

// goAway sends GOAWAY with code and waits (a while) for it to be written.
func (c *leanConn) goAway(code http2.ErrCode) {
	_ = c.nc.SetWriteDeadline(time.Now().Add(goAwayWrite))
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dead {
		return
	}
	c.goingAway = true
	_ = c.wf.WriteGoAway(c.lastID, code, nil)
	c.kickLocked(false)
	for (c.writing || len(c.out) > 0) && !c.dead {
		c.cond.Wait()
	}
	c.mu.Unlock()
	c.linger()
	c.mu.Lock()
}

// linger half-closes the connection and reads what the peer still sends,
// for a moment: closed with unread bytes, the connection would be reset,
// and the peer could lose the GOAWAY that says why.
func (c *leanConn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(lingerFor))
	_, _ = io.CopyN(io.Discard, c.nc, leanMaxOut)
}

// lingerFor bounds linger.
const lingerFor = time.Second

// goAwayWrite bounds how long a connection in error waits for its peer to read the GOAWAY.
const goAwayWrite = 5 * time.Second

// drain sends GOAWAY(NO_ERROR) and waits, until ctx ends, for the calls
// under way to be answered and written.
func (c *leanConn) drain(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.goingAway && !c.dead {
		c.goingAway = true
		_ = c.wf.WriteGoAway(c.lastID, http2.ErrCodeNo, nil)
		c.kickLocked(false)
	}
	for (len(c.streams) > 0 || c.writing || len(c.out) > 0) && !c.dead && ctx.Err() == nil {
		c.cond.Wait()
	}
}

// close closes the connection; calls still running finish unanswered.
func (c *leanConn) close() {
	c.once.Do(func() {
		c.mu.Lock()
		c.dead = true
		for _, st := range c.streams {
			st.sctx.cancelLocked() // the others end with c.ctx
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		_ = c.nc.Close()
		c.cancel()
		if c.ager != nil {
			c.ager.Stop()
		}
	})
}

// waitOut waits while the output is over leanMaxOut, and reports whether the connection is open.
func (c *leanConn) waitOut() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.out) > leanMaxOut && !c.dead {
		c.cond.Wait()
	}
	return !c.dead
}

func (c *leanConn) frame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.HeadersFrame:
		return c.onHeaders(f)
	case *http2.ContinuationFrame:
		return c.onFragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			c.mu.Lock()
			_ = c.wf.WritePing(true, f.Data)
			c.kickLocked(false)
			c.mu.Unlock()
		}
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.RSTStreamFrame:
		return c.onReset(f)
	case *http2.PushPromiseFrame:
		return connError{http2.ErrCodeProtocol, "PUSH_PROMISE from a client"}
	}
	// GOAWAY, PRIORITY and frames of unknown types change nothing here.
	return nil
}

func (c *leanConn) onHeaders(f *http2.HeadersFrame) error {
	id := f.StreamID
	c.mu.Lock()
	st, last := c.streams[id], c.lastID
	if st == nil && id > last {
		c.lastID = id
	}
	c.mu.Unlock()
	switch {
	case id%2 == 0:
		return connError{http2.ErrCodeProtocol, "even stream id from a client"}
	case st == nil && id <= last:
		return connError{http2.ErrCodeProtocol, "HEADERS on a closed stream"}
	}
	c.hdr, c.hdrID, c.hdrEnd, c.hdrBytes = reqHeaders{trailers: st != nil}, id, f.StreamEnded(), 0
	return c.onFragment(f.HeaderBlockFragment(), f.HeadersEnded())
}

// onFragment decodes a part of a header block, as it comes: the decoder
// keeps only what a field cut in two needs.
func (c *leanConn) onFragment(b []byte, end bool) error {
	c.hdrBytes += len(b)
	if c.hdrBytes > leanMaxHeaderList {
		return connError{http2.ErrCodeEnhanceYourCalm, "header block too large"}
	}
	if _, err := c.dec.Write(b); err != nil {
		return connError{http2.ErrCodeCompression, err.Error()}
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return connError{http2.ErrCodeCompression, err.Error()}
	}
	return c.onRequestHeaders()
}

// onRequestHeaders starts a stream whose headers were read.
func (c *leanConn) onRequestHeaders() error {
	h, id := &c.hdr, c.hdrID
	c.mu.Lock()
	defer c.mu.Unlock()
	if h.trailers {
		st := c.streams[id]
		switch {
		case st == nil:
		case st.state != streamRecv || !c.hdrEnd:
			c.resetLocked(id, http2.ErrCodeProtocol)
		default:
			c.endStreamLocked(st)
		}
		return nil
	}
	if c.goingAway || len(c.streams) >= leanMaxStreams || c.dead {
		_ = c.wf.WriteRSTStream(id, http2.ErrCodeRefusedStream)
		c.kickLocked(false)
		return nil
	}
	if h.method != "POST" || h.other {
		_ = c.wf.WriteRSTStream(id, http2.ErrCodeProtocol)
		c.kickLocked(false)
		return nil
	}
	st := c.newStreamLocked(id)
	st.timeout, st.remoteDone = h.timeout, c.hdrEnd
	switch {
	case h.path == pathShouldRateLimit:
		st.method = methodShouldRateLimit
	case h.path == pathHealthCheck:
		st.method = methodHealthCheck
	default:
		return c.failLocked(st, codes.Unimplemented, "lean gRPC path (--grpc-lean yes): method "+h.path+" is served only on a connection whose first call is not ShouldRateLimit or Health/Check")
	}
	switch {
	case !protoContentType(h.contentType):
		return c.failLocked(st, codes.Unimplemented, "lean gRPC path (--grpc-lean yes): content-type "+h.contentType+" not served")
	case h.encoding != "" && h.encoding != "identity":
		return c.failLocked(st, codes.Unimplemented, "grpc: Decompressor is not installed for grpc-encoding \""+h.encoding+"\"")
	case h.badTimeout:
		return c.failLocked(st, codes.Internal, "transport: malformed grpc-timeout")
	}
	if c.hdrEnd {
		c.endStreamLocked(st)
	}
	return nil
}

// failLocked answers st with an error before its call starts; a stream
// the peer still sends on is reset, so that it stops.
func (c *leanConn) failLocked(st *leanStream, code codes.Code, msg string) error {
	open := !st.remoteDone
	st.state = streamRunning
	c.giveBackLocked(st.credit)
	st.credit = 0
	c.writeStatusLocked(st, status.New(code, msg), true)
	if open {
		_ = c.wf.WriteRSTStream(st.id, http2.ErrCodeNo)
	}
	c.releaseLocked(st)
	c.kickLocked(false)
	return nil
}

func (c *leanConn) onData(f *http2.DataFrame) error {
	n := int64(f.Header().Length)
	id := f.StreamID
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inFlight += n
	if c.inFlight > int64(c.window) {
		return connError{http2.ErrCodeFlowControl, "peer sent past the connection window"}
	}
	st := c.streams[id]
	if st == nil || st.state != streamRecv {
		c.giveBackLocked(n)
		switch {
		case id > c.lastID:
			return connError{http2.ErrCodeProtocol, "DATA on an idle stream"}
		case st != nil:
			c.resetLocked(id, http2.ErrCodeStreamClosed)
		}
		c.kickLocked(false)
		return nil
	}
	st.credit += n
	st.recvd += n
	data := f.Data()
	switch {
	case st.recvd > int64(c.window):
		c.resetLocked(id, http2.ErrCodeFlowControl)
		return nil
	case len(st.buf)+len(data) > c.l.maxRecv+5:
		st.remoteDone = f.StreamEnded()
		return c.failLocked(st, codes.ResourceExhausted, errTooLarge(len(st.buf)+len(data)-5, c.l.maxRecv))
	}
	st.buf = append(st.buf, data...)
	if f.StreamEnded() {
		c.endStreamLocked(st)
	}
	return nil
}

// endStreamLocked starts st's call once its request is whole.
func (c *leanConn) endStreamLocked(st *leanStream) {
	b := st.buf
	st.remoteDone = true
	switch {
	case len(b) < 5:
		_ = c.failLocked(st, codes.Internal, "grpc: unary call without a whole request message")
		return
	case b[0] != 0:
		_ = c.failLocked(st, codes.Internal, "grpc: compressed flag set with identity or empty encoding")
		return
	case int(be32(b[1:5])) != len(b)-5:
		_ = c.failLocked(st, codes.Internal, "grpc: request is not exactly one message")
		return
	}
	st.state = streamRunning
	if st.timeout > 0 {
		st.ctx, st.cancel = context.WithTimeout(c.ctx, st.timeout)
	} else {
		st.sctx.startLocked()
		st.ctx = &st.sctx
	}
	c.calls.Add(1)
	c.l.dispatch(st)
}

func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

func (c *leanConn) onReset(f *http2.RSTStreamFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID > c.lastID {
		return connError{http2.ErrCodeProtocol, "RST_STREAM on an idle stream"}
	}
	st := c.streams[f.StreamID]
	if st == nil {
		return nil
	}
	c.dropLocked(st)
	return nil
}

// dropLocked forgets st: a stream still receiving is released now, one
// whose call runs when the call ends (it still counts against the
// streams' limit until then).
func (c *leanConn) dropLocked(st *leanStream) {
	if st.cancel != nil {
		st.cancel()
	}
	st.sctx.cancelLocked()
	if st.state == streamRunning && !st.parkedNow {
		st.reset = true
		return
	}
	c.giveBackLocked(st.credit)
	st.credit = 0
	c.releaseLocked(st)
}

// resetLocked sends RST_STREAM and forgets the stream.
func (c *leanConn) resetLocked(id uint32, code http2.ErrCode) {
	_ = c.wf.WriteRSTStream(id, code)
	if st := c.streams[id]; st != nil {
		c.dropLocked(st)
	}
	c.kickLocked(false)
}

func (c *leanConn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	err := f.ForeachSetting(func(s http2.Setting) error {
		if err := s.Valid(); err != nil {
			return err
		}
		switch s.ID {
		case http2.SettingInitialWindowSize:
			delta := int64(s.Val) - c.peerInitWin
			c.peerInitWin = int64(s.Val)
			for _, st := range c.streams {
				st.sendWin += delta
				if st.sendWin > maxWindow {
					return connError{http2.ErrCodeFlowControl, "stream window past 2^31-1"}
				}
			}
		case http2.SettingMaxFrameSize:
			c.peerMaxFrame = int(s.Val)
		case http2.SettingHeaderTableSize:
			// Answers never index, so a smaller table is only acknowledged.
			c.tableUpdate = c.tableUpdate || s.Val < 4096
		}
		return nil
	})
	if err != nil {
		return err
	}
	_ = c.wf.WriteSettingsAck()
	c.sendParkedLocked()
	c.kickLocked(false)
	return nil
}

// maxWindow is HTTP/2's largest flow-control window.
const maxWindow = 1<<31 - 1

func (c *leanConn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	inc := int64(f.Increment)
	if f.StreamID == 0 {
		if c.sendWin += inc; c.sendWin > maxWindow {
			return connError{http2.ErrCodeFlowControl, "connection window past 2^31-1"}
		}
	} else if st := c.streams[f.StreamID]; st != nil {
		if st.sendWin += inc; st.sendWin > maxWindow {
			c.resetLocked(f.StreamID, http2.ErrCodeFlowControl)
			return nil
		}
	}
	c.sendParkedLocked()
	c.kickLocked(false)
	return nil
}

// giveBackLocked returns n received bytes to the peer's window, in
// WINDOW_UPDATEs of at least leanWindowAck.
func (c *leanConn) giveBackLocked(n int64) {
	if n == 0 {
		return
	}
	c.inFlight -= n
	c.unacked += uint32(n)
	if c.unacked >= leanWindowAck && !c.dead {
		_ = c.wf.WriteWindowUpdate(0, c.unacked)
		c.unacked = 0
	}
}

// kickLocked writes the output unless a write is under way: inline, the
// caller writes it after unlocking (see flush); otherwise on a goroutine
// of its own, for the reader, which must not wait on the peer.
func (c *leanConn) kickLocked(inline bool) bool {
	if c.writing || len(c.out) == 0 || c.dead {
		return false
	}
	c.writing = true
	if !inline {
		go c.flush()
		return false
	}
	return true
}

// flush writes the output until none is left; its caller set writing.
// Like grpc-go's loopy writer, it yields once before writing a small
// batch while other calls on the connection are under way, so that
// answers finishing at about the same time share one write.
func (c *leanConn) flush() {
	c.mu.Lock()
	if len(c.out) < leanBatch && len(c.streams) > 0 {
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	for len(c.out) > 0 && !c.dead {
		buf := c.out
		c.out = c.spare[:0]
		c.mu.Unlock()
		_, err := c.nc.Write(buf)
		c.mu.Lock()
		if cap(buf) <= 2*leanMaxOut {
			c.spare = buf[:0]
		} else {
			c.spare = nil
		}
		c.cond.Broadcast()
		if err != nil {
			c.mu.Unlock()
			c.close()
			c.mu.Lock()
		}
	}
	c.writing = false
	c.cond.Broadcast()
	c.mu.Unlock()
}
