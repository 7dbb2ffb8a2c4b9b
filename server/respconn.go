package server

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/tidwall/redcon"
)

// Read buffer sizes. A connection starts with readBufMin; a request larger
// than that grows it, and it goes back to readBufMin once it is empty, so an
// idle client holds little whatever it once sent.
const (
	readBufMin = 8 << 10
	readBufMax = 64 << 10 // above this an empty buffer is dropped rather than kept
)

// respConn is one client connection: it reads and parses requests, and
// buffers the replies of a batch, which serve writes in one go once every
// request the last read brought in has run. Commands write through its
// Write methods. All its methods but Later's Finish belong to the
// connection's own goroutine.
type respConn struct {
	g    *guardConn
	p    resp.Parser
	buf  []byte   // read buffer; buf[r:w] holds bytes read and not yet run
	r, w int      //
	args [][]byte // the arguments of the command being run, reused
	keep int      // the largest empty buffer kept rather than dropped: readBufMax, or more for a peer

	// Requests parsed ahead of the one being run (parseAhead), which
	// command returns without parsing them again: each one's length and
	// where its arguments' offsets start in aheadOffs. cur is the index in
	// ahead of the command being run, or -1 if it was parsed on its own.
	ahead     []aheadReq
	aheadOffs []int
	next, cur int

	out     []byte // replies of the batch under way
	limit   int64  // most bytes of replies held for the client; 0: no limit
	mark    int64  // len(out) past which check must look: the limit, or the next chunk of mem
	mem     *clientMem
	held    atomic.Int64 // bytes of out counted toward mem (clientmem.go)
	evicted atomic.Bool  // mem closed this client
	leaving atomic.Int64 // of held, what mem counts as on its way out since it closed this client
	over    bool         // the replies passed limit: the client is disconnected
	closing bool         // Close was called: close once the replies are out

	batchEnd bool // PeekPipeline reports nothing: the batch so far is to be committed

	wmu sync.Mutex  // serialises writes to the socket, and taking what they write from box
	iov net.Buffers // the last write's slices, kept for the next one's; wmu guards it
	seq uint64      // the read batch under way, for Later.seq; the connection's goroutine's
	box outbox      // replies that wait for a Later

	drained func() // called with wmu held once no reply waits in box; may be nil

	raw *resp.RawWriter // writes a batch's replies to the socket; nil: through g.Conn

	netIn, netOut atomic.Int64 // bytes read and replies written, for INFO's total_net_*_bytes
}

func newRespConn(g *guardConn, maxRequest, outLimit int64) *respConn {
	return newRespConnMem(g, maxRequest, outLimit, nil)
}

// newRespConnMem is newRespConn counting its replies toward mem's budget.
func newRespConnMem(g *guardConn, maxRequest, outLimit int64, mem *clientMem) *respConn {
	rc := &respConn{g: g, p: resp.Parser{Max: maxRequest}, buf: make([]byte, readBufMin), limit: outLimit, cur: -1,
		raw: resp.NewRawWriter(g.Conn), mem: mem}
	rc.mark = mem.mark(rc)
	rc.box.wake = make(chan struct{}, 1)
	return rc
}

// maxAheadArgs is the most arguments of a request parseAhead takes: a
// request with more is parsed when it runs, so that a connection that once
// sent a huge one does not keep a second copy of its offsets.
const maxAheadArgs = 64

// aheadReq is a request parseAhead parsed: where it starts in the read
// buffer, its length, and its arguments' start and end offsets, relative to
// it, at aheadOffs[offs:offs+2*args].
type aheadReq struct {
	at, n, offs, args int
}

// parseAhead parses up to max whole requests from the start of the unread
// bytes, for command to return in turn, so that the server can look at the
// batch's first requests (prefetchBatch) and each is still parsed once. It
// stops before an inline request and at a partial one, which command then
// parses as it comes to them, and at a malformed one, which it leaves for
// command to find again in its turn: the requests before it run first.
func (rc *respConn) parseAhead(max int) {
	rc.ahead, rc.aheadOffs, rc.next = rc.ahead[:0], rc.aheadOffs[:0], 0
	for i := rc.r; i < rc.w && len(rc.ahead) < max; {
		if !rc.p.InArray() && rc.buf[i] != '*' { // inline, perhaps partly read already
			return
		}
		n, err := rc.p.Next(rc.buf[i:rc.w])
		if err != nil {
			rc.p.Restart()
			return
		}
		if n == 0 {
			return
		}
		if rc.p.NumArgs() > maxAheadArgs { // left to command, so that aheadOffs stays small
			rc.p.Restart()
			return
		}
		rc.ahead = append(rc.ahead, aheadReq{at: i, n: n, offs: len(rc.aheadOffs), args: rc.p.NumArgs()})
		rc.aheadOffs = rc.p.TakeOffsets(rc.aheadOffs)
		i += n
	}
}

// aheadArg returns argument j of the request ahead[i], which must have it.
func (rc *respConn) aheadArg(i, j int) []byte {
	q := rc.ahead[i]
	o := rc.aheadOffs[q.offs+2*j : q.offs+2*j+2]
	return rc.buf[q.at+o[0] : q.at+o[1] : q.at+o[1]]
}

// dropAhead forgets the requests parsed ahead, which were consumed otherwise.
func (rc *respConn) dropAhead() { rc.ahead, rc.next = rc.ahead[:0], 0 }

// command returns the next whole command in the buffer, or nil if there is
// none. Its arguments point into the buffer and are valid until the next call.
func (rc *respConn) command() ([][]byte, error) {
	if rc.next < len(rc.ahead) {
		q := rc.ahead[rc.next]
		rc.cur = rc.next
		rc.next++
		req := rc.buf[rc.r : rc.r+q.n]
		rc.r += q.n
		args := rc.args[:0]
		offs := rc.aheadOffs[q.offs : q.offs+2*q.args]
		for i := 0; i+1 < len(offs); i += 2 {
			args = append(args, req[offs[i]:offs[i+1]:offs[i+1]])
		}
		rc.args = args
		return args, nil
	}
	rc.cur = -1
	for rc.r < rc.w {
		n, err := rc.p.Next(rc.buf[rc.r:rc.w])
		if err != nil || n == 0 {
			return nil, err
		}
		req := rc.buf[rc.r : rc.r+n]
		rc.r += n
		if rc.args = rc.p.Args(req, rc.args[:0]); len(rc.args) > 0 {
			return rc.args, nil
		}
	}
	return nil, nil
}

// idle reports whether the connection stands between requests.
func (rc *respConn) idle() bool { return rc.r == rc.w && rc.p.Idle() }

// fill reads more of the client's requests, waiting for them.
func (rc *respConn) fill() error {
	rc.makeRoom()
	n, err := rc.g.readRequest(rc.buf[rc.w:], rc.idle())
	rc.w += n
	rc.netIn.Add(int64(n))
	return err
}

// makeRoom gives the read buffer space at its end: it resets or shrinks an
// empty buffer, moves a partial request to the front, and doubles the
// buffer when a request fills it. The request cap bounds its growth, and it
// grows only as bytes arrive, never for a length merely announced.
func (rc *respConn) makeRoom() {
	switch {
	case rc.r == rc.w:
		rc.r, rc.w = 0, 0
		if len(rc.buf) > max(readBufMax, rc.keep) {
			rc.buf = make([]byte, readBufMin)
		}
	case len(rc.buf)-rc.w < len(rc.buf)/8:
		rc.w = copy(rc.buf, rc.buf[rc.r:rc.w])
		rc.r = 0
		if rc.w > len(rc.buf)/2 {
			grown := make([]byte, 2*len(rc.buf))
			copy(grown, rc.buf[:rc.w])
			rc.buf = grown
		}
	}
}

// dropPipeline discards every request read and not yet run.
func (rc *respConn) dropPipeline() {
	rc.dropAhead()
	rc.r, rc.w = 0, 0
	rc.p = resp.Parser{Max: rc.p.Max, PreAuth: rc.p.PreAuth}
}

// PeekPipeline returns the whole requests read after the command being
// run, which the same batch will run. It does not consume them.
func (rc *respConn) PeekPipeline() [][]byte {
	if rc.batchEnd || rc.next == len(rc.ahead) && !rc.p.Idle() {
		return nil // the next request is partial, so nothing after it is whole either
	}
	var reqs [][]byte
	scratch := resp.Parser{Max: rc.p.Max}
	for i := rc.r; i < rc.w; {
		n, err := scratch.Next(rc.buf[i:rc.w])
		if err != nil || n == 0 {
			break
		}
		scratch.Skip()
		reqs = append(reqs, rc.buf[i:i+n])
		i += n
	}
	return reqs
}

// ReadPipeline takes the whole requests read after the command being run,
// as PeekPipeline returns them but copied, so they are not run here; the
// rest of the stream is read as usual. QUIT and other closing commands use
// it to drop the rest of a pipeline.
func (rc *respConn) ReadPipeline() [][]byte {
	reqs := rc.PeekPipeline()
	rc.dropAhead()
	for i, r := range reqs {
		rc.r += len(r)
		reqs[i] = append([]byte(nil), r...)
	}
	return reqs
}

// Close closes the connection once the replies written so far have gone
// out; the rest of its pipeline is not run.
func (rc *respConn) Close() error {
	rc.closing = true
	return nil
}

// The reply writers. They append to the batch's replies; past the output
// limit they drop them and mark the client for disconnection.

func (rc *respConn) WriteString(s string) { rc.out = redcon.AppendString(rc.out, s); rc.check() }
func (rc *respConn) WriteError(s string)  { rc.out = redcon.AppendError(rc.out, s); rc.check() }
func (rc *respConn) WriteBulk(b []byte)   { rc.out = redcon.AppendBulk(rc.out, b); rc.check() }
func (rc *respConn) WriteBulkString(s string) {
	rc.out = redcon.AppendBulkString(rc.out, s)
	rc.check()
}
func (rc *respConn) WriteInt(n int)       { rc.out = redcon.AppendInt(rc.out, int64(n)); rc.check() }
func (rc *respConn) WriteInt64(n int64)   { rc.out = redcon.AppendInt(rc.out, n); rc.check() }
func (rc *respConn) WriteArray(n int)     { rc.out = redcon.AppendArray(rc.out, n); rc.check() }
func (rc *respConn) WriteNull()           { rc.out = redcon.AppendNull(rc.out); rc.check() }
func (rc *respConn) WriteRaw(b []byte)    { rc.out = append(rc.out, b...); rc.check() }
func (rc *respConn) WriteUint64(n uint64) { rc.out = redcon.AppendUint(rc.out, n); rc.check() }
func (rc *respConn) WriteAny(v any)       { rc.out = redcon.AppendAny(rc.out, v); rc.check() }

// check enforces the output limit on the batch's replies, and counts them
// toward the budget of all clients' (clientmem.go): one comparison a reply.
func (rc *respConn) check() {
	if int64(len(rc.out)) > rc.mark {
		rc.grew()
	}
}

func (rc *respConn) grew() {
	if rc.limit > 0 && int64(len(rc.out)) > rc.limit {
		rc.overflow()
		return
	}
	rc.mem.grow(rc)
	rc.mark = rc.mem.mark(rc)
}

// overflow drops the replies held and marks the client for disconnection,
// as Redis does past client-output-buffer-limit.
func (rc *respConn) overflow() {
	rc.over, rc.out = true, rc.out[:0]
	if cap(rc.out) > readBufMax {
		rc.out = nil
	}
	rc.released()
}

// released takes the replies off the budget: they were written or dropped.
func (rc *respConn) released() {
	if rc.held.Load() != 0 {
		rc.mem.release(rc)
	}
	rc.mark = rc.mem.mark(rc)
}

// waitWrites waits for a write under way on another goroutine to finish.
func (rc *respConn) waitWrites() {
	rc.wmu.Lock()
	//lint:ignore SA2001 an empty critical section: waiting for the holder is the point
	rc.wmu.Unlock()
}

// flush writes the batch's replies, and every reply after them that is
// ready, waiting while the socket is full: a client that does not read
// stops being read. It keeps the output buffer for the next batch.
func (rc *respConn) flush() error {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.box.mu.Lock()
	if len(rc.box.segs) == 0 {
		rc.box.mu.Unlock()
		return rc.writeOut()
	}
	if len(rc.out) > 0 {
		rc.box.appendDoneLocked(rc.seq, rc.takeOut())
	}
	bufs := rc.box.takeLocked(rc.iov[:0])
	rc.box.mu.Unlock()
	rc.iov = bufs[:0] // WriteTo consumes bufs; its array is kept for the next write
	_, err := bufs.WriteTo(rc.g.Conn)
	rc.drainedLocked()
	return err
}

// checkDrained calls drained if no reply waits in the box. Holding wmu
// means no reply taken from the box is still being written.
func (rc *respConn) checkDrained() {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.drainedLocked()
}

// drainedLocked calls drained if the box is empty; wmu must be held.
func (rc *respConn) drainedLocked() {
	rc.box.mu.Lock()
	empty := len(rc.box.segs) == 0
	rc.box.mu.Unlock()
	if empty && rc.drained != nil {
		rc.drained()
	}
}

func (rc *respConn) writeOut() error {
	if len(rc.out) == 0 {
		return nil
	}
	var err error
	rc.netOut.Add(int64(len(rc.out)))
	if rc.raw != nil {
		err = rc.raw.Write(rc.out)
	} else {
		_, err = rc.g.Conn.Write(rc.out)
	}
	if cap(rc.out) > readBufMax {
		rc.out = nil // a large reply's buffer is not kept for the next small one
	} else {
		rc.out = rc.out[:0]
	}
	return err
}

// clientConn is what commands write replies through: the connection
// itself, or a holdConn wrapping it.
type clientConn interface {
	replyWriter
	Close() error
	PeekPipeline() [][]byte
	ReadPipeline() [][]byte
}

// replyWriter writes RESP replies; redcon's Writer is one too.
type replyWriter interface {
	WriteError(s string)
	WriteString(s string)
	WriteBulk(b []byte)
	WriteBulkString(s string)
	WriteInt(n int)
	WriteInt64(n int64)
	WriteUint64(n uint64)
	WriteArray(n int)
	WriteNull()
	WriteRaw(b []byte)
	WriteAny(v any)
}

var _ clientConn = (*respConn)(nil)

// The socket respConn writes to, for the async writer.
func (rc *respConn) socket() net.Conn { return rc.g.Conn }
