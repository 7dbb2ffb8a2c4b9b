package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/rlstore/rlstore/loadtest/internal/hist"
)

// h2Gen is the lean client (-client h2): cfg.conns connections, each
// with its share of cfg.c calls in flight.
type h2Gen struct {
	cfg   config
	t     *tally
	stop  *stopper
	reqs  *reqTable
	conns []*h2Conn
}

func newH2Gen(cfg config, t *tally, stop *stopper) (*h2Gen, error) {
	g := &h2Gen{cfg: cfg, t: t, stop: stop, reqs: newReqTable(cfg)}
	if g.reqs.max > h2MaxRequest {
		return nil, fmt.Errorf("a request of %d bytes: at most %d", g.reqs.max, h2MaxRequest)
	}
	for i := range cfg.conns {
		want := cfg.c / cfg.conns
		if i < cfg.c%cfg.conns {
			want++
		}
		if want == 0 {
			continue
		}
		c, err := dialH2(g, i, want)
		if err != nil {
			for _, c := range g.conns {
				_ = c.nc.Close()
			}
			return nil, err
		}
		g.conns = append(g.conns, c)
	}
	return g, nil
}

// h2MaxRequest bounds a request: one DATA frame within HTTP/2's smallest
// frame size and default window, so that a call is always one HEADERS and
// one DATA frame.
const h2MaxRequest = 16 << 10

func (g *h2Gen) run() (*hist.Histogram, error) {
	var wg sync.WaitGroup
	errs := make([]error, len(g.conns))
	for i, c := range g.conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.run()
		}()
	}
	wg.Wait()
	var h hist.Histogram
	for _, c := range g.conns {
		h.Merge(&c.hist)
	}
	return &h, errors.Join(errs...)
}

// h2Conn is one connection of the lean client. One goroutine reads its
// answers and, as each call ends, starts the next (a closed loop); the
// calls started while it read go out in one write before it reads again.
type h2Conn struct {
	g    *h2Gen
	nc   net.Conn
	br   *bufio.Reader
	fr   *http2.Framer // reads
	wf   *http2.Framer // writes into out
	out  []byte
	dec  *hpack.Decoder
	rng  *rand.Rand
	hist hist.Histogram

	want, inFlight int
	slots          []h2Slot // a stream's call at slots[id/2 & mask]
	mask           uint32
	nextID         uint32
	body           []byte

	block, firstBlock []byte // a call's header block: HPACK-indexed, and the first that indexes it
	sentFirst         bool
	sendWin           int64 // the server's connection window
	recvUnacked       uint32
	hdrSlot           *h2Slot // the stream whose header block is being read
	hdrEnd            bool    // its HEADERS ended the stream
}

// h2Slot is a call in flight.
type h2Slot struct {
	id      uint32
	busy    bool
	start   time.Time
	answer  []byte
	status  int // grpc-status, -1 while none
	message string
	req     []byte // only when recording
}

// The lean client's own HTTP/2 settings: windows so large that the
// answers never wait for one.
const (
	h2Window      = 1 << 30
	h2WindowAck   = 1 << 29
	h2HeaderTable = 4096
)

func dialH2(g *h2Gen, i, want int) (*h2Conn, error) {
	nc, err := net.Dial("tcp", g.cfg.addr)
	if err != nil {
		return nil, err
	}
	c := &h2Conn{g: g, nc: nc, br: bufio.NewReaderSize(nc, 64<<10), want: want, sendWin: 65535,
		rng: rand.New(rand.NewPCG(uint64(i), 7)), nextID: 1}
	size := 1
	for size < 4*want {
		size *= 2
	}
	c.slots, c.mask = make([]h2Slot, size), uint32(size-1)
	c.fr = http2.NewFramer(nil, c.br)
	c.fr.SetReuseFrames()
	c.fr.SetMaxReadFrameSize(1 << 20)
	c.wf = http2.NewFramer(appender{&c.out}, nil)
	c.dec = hpack.NewDecoder(h2HeaderTable, c.field)
	c.encodeBlocks()
	c.out = append(c.out, http2.ClientPreface...)
	_ = c.wf.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: h2Window},
		http2.Setting{ID: http2.SettingEnablePush, Val: 0})
	_ = c.wf.WriteWindowUpdate(0, h2Window-65535)
	return c, nil
}

// appender is an io.Writer appending to a slice.
type appender struct{ b *[]byte }

func (a appender) Write(p []byte) (int, error) {
	*a.b = append(*a.b, p...)
	return len(p), nil
}

// encodeBlocks encodes a call's header fields twice with one HPACK
// encoder: the first block adds them to the server's dynamic table, the
// second only refers to them, and every later call sends that one.
func (c *h2Conn) encodeBlocks() {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	fields := []hpack.HeaderField{{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "http"},
		{Name: ":path", Value: "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"},
		{Name: ":authority", Value: c.g.cfg.addr}, {Name: "content-type", Value: "application/grpc"},
		{Name: "te", Value: "trailers"}, {Name: "user-agent", Value: "rlsload"}}
	for _, f := range fields {
		_ = enc.WriteField(f)
	}
	c.firstBlock = bytes.Clone(buf.Bytes())
	buf.Reset()
	for _, f := range fields {
		_ = enc.WriteField(f)
	}
	c.block = bytes.Clone(buf.Bytes())
}

// run keeps the connection's calls in flight until the run stops, then
// waits (until h2Drain past the run's deadline) for the last answers.
func (c *h2Conn) run() error {
	defer c.nc.Close()
	_ = c.nc.SetReadDeadline(c.g.stop.deadline.Add(h2Drain))
	for {
		c.fill()
		if c.inFlight == 0 && (c.g.stop.stopped.Load() || !time.Now().Before(c.g.stop.deadline)) {
			return nil
		}
		if len(c.out) > 0 && c.br.Buffered() == 0 {
			if _, err := c.nc.Write(c.out); err != nil {
				return c.abort(err)
			}
			c.out = c.out[:0]
		}
		f, err := c.fr.ReadFrame()
		if err != nil {
			return c.abort(err)
		}
		if err := c.frame(f); err != nil {
			return c.abort(err)
		}
	}
}

// h2Drain bounds the wait for the last answers once the run stops.
const h2Drain = 10 * time.Second

// abort fails the calls still in flight.
func (c *h2Conn) abort(err error) error {
	for i := range c.slots {
		if c.slots[i].busy {
			c.g.t.fail("unanswered: " + err.Error())
			c.slots[i] = h2Slot{}
		}
	}
	c.inFlight = 0
	if c.g.stop.stopped.Load() {
		return nil // unanswered at the end: counted as errors
	}
	return fmt.Errorf("%s: %w", c.nc.RemoteAddr(), err)
}

// fill starts calls until want are in flight, the run stops, or the
// server's window is spent.
func (c *h2Conn) fill() {
	for c.inFlight < c.want && c.sendWin >= int64(c.g.reqs.max) && c.g.stop.next() {
		c.start()
	}
}

func (c *h2Conn) start() {
	id := c.nextID
	for c.slots[id>>1&c.mask].busy {
		id += 2 // a skipped stream id is closed, as HTTP/2 allows
	}
	c.nextID = id + 2
	s := &c.slots[id>>1&c.mask]
	block := c.block
	if !c.sentFirst {
		block, c.sentFirst = c.firstBlock, true
	}
	c.body = c.g.reqs.append(c.body[:0], c.rng)
	*s = h2Slot{id: id, busy: true, status: -1, answer: s.answer[:0]}
	if c.g.cfg.record != nil {
		s.req = bytes.Clone(c.body[5:])
	}
	_ = c.wf.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
	_ = c.wf.WriteData(id, true, c.body)
	c.sendWin -= int64(len(c.body))
	c.inFlight++
	s.start = time.Now()
}

func (c *h2Conn) slot(id uint32) *h2Slot {
	s := &c.slots[id>>1&c.mask]
	if !s.busy || s.id != id {
		return nil
	}
	return s
}

func (c *h2Conn) frame(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.HeadersFrame:
		c.hdrSlot, c.hdrEnd = c.slot(f.StreamID), f.StreamEnded()
		return c.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.ContinuationFrame:
		return c.fragment(f.HeaderBlockFragment(), f.HeadersEnded())
	case *http2.DataFrame:
		return c.data(f)
	case *http2.RSTStreamFrame:
		if s := c.slot(f.StreamID); s != nil {
			c.done(s, "RST_STREAM "+f.ErrCode.String())
		}
	case *http2.SettingsFrame:
		return c.settings(f)
	case *http2.PingFrame:
		if !f.IsAck() {
			_ = c.wf.WritePing(true, f.Data)
		}
	case *http2.WindowUpdateFrame:
		if f.StreamID == 0 {
			c.sendWin += int64(f.Increment)
			c.fill()
		}
	case *http2.GoAwayFrame:
		return fmt.Errorf("GOAWAY %v %q", f.ErrCode, f.DebugData())
	}
	return nil
}

func (c *h2Conn) settings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	err := f.ForeachSetting(func(s http2.Setting) error {
		switch s.ID {
		case http2.SettingInitialWindowSize:
			if int(s.Val) < c.g.reqs.max {
				return fmt.Errorf("the server's stream window (%d) is smaller than a request", s.Val)
			}
		case http2.SettingMaxConcurrentStreams:
			c.want = min(c.want, int(s.Val))
		case http2.SettingHeaderTableSize:
			if s.Val < h2HeaderTable {
				return fmt.Errorf("the server's HPACK table (%d) is smaller than %d", s.Val, h2HeaderTable)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return c.wf.WriteSettingsAck()
}

func (c *h2Conn) data(f *http2.DataFrame) error {
	if n := f.Header().Length; n > 0 {
		if c.recvUnacked += n; c.recvUnacked >= h2WindowAck {
			_ = c.wf.WriteWindowUpdate(0, c.recvUnacked)
			c.recvUnacked = 0
		}
	}
	s := c.slot(f.StreamID)
	if s == nil {
		return nil
	}
	s.answer = append(s.answer, f.Data()...)
	if f.StreamEnded() {
		c.done(s, "answer without trailers")
	}
	return nil
}

// fragment decodes a part of a header block; at its end, trailers end the call.
func (c *h2Conn) fragment(b []byte, end bool) error {
	if _, err := c.dec.Write(b); err != nil {
		return err
	}
	if !end {
		return nil
	}
	if err := c.dec.Close(); err != nil {
		return err
	}
	if s := c.hdrSlot; s != nil && c.hdrEnd {
		c.done(s, "")
	}
	return nil
}

// field keeps what a call's answer says of its status.
func (c *h2Conn) field(f hpack.HeaderField) {
	s := c.hdrSlot
	if s == nil {
		return
	}
	switch f.Name {
	case "grpc-status":
		n, err := strconv.Atoi(f.Value)
		if err != nil {
			n = -2
		}
		s.status = n
	case "grpc-message":
		s.message = f.Value
	}
}

// done ends s's call: its latency, then its check; why is a transport failure.
func (c *h2Conn) done(s *h2Slot, why string) {
	c.hist.Record(time.Since(s.start))
	t := c.g.t
	t.calls.Add(1)
	if rec := c.g.cfg.record; rec != nil {
		rec(s.req, s.answer, s.status, s.message)
	}
	switch {
	case why != "":
		t.fail(why)
	case s.status != 0:
		t.fail("grpc-status " + strconv.Itoa(s.status) + ": " + s.message)
	default:
		code, err := checkAnswer(s.answer, c.g.reqs.n)
		switch {
		case err != nil:
			t.fail(err.Error())
		case code == codeOverLimit:
			t.over.Add(1)
		}
	}
	s.busy, s.req = false, nil
	c.inFlight--
	c.fill()
}
