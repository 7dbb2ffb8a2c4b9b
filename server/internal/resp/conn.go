package resp

import (
	"net"
	"sync"
	"sync/atomic"

	"github.com/rlstore/rlstore/internal/wire"
	"github.com/tidwall/redcon"
)

// Read buffer sizes. A connection starts with readBufMin; a request larger
// than that grows it, and it goes back to readBufMin once it is empty, so an
// idle client holds little whatever it once sent.
const (
	readBufMin = 8 << 10
	readBufMax = 64 << 10 // above this an empty buffer is dropped rather than kept
)

// Conn is one client connection: it reads and parses requests, and
// buffers the replies of a batch, which the server writes in one go once
// every request the last read brought in has run. Commands write through
// its Write methods. All its methods but Later's Finish, Push and the
// accessors of counters (Held, Evicted, NetIn, NetOut, Boxed, PushesWaiting)
// belong to the connection's own goroutine.
type Conn struct {
	g    *Guard
	p    wire.Parser
	buf  []byte   // read buffer; buf[r:w] holds bytes read and not yet run
	r, w int      //
	args [][]byte // the arguments of the command being run, reused
	keep int      // the largest empty buffer kept rather than dropped: readBufMax, or more for a peer

	// Requests parsed ahead of the one being run (ParseAhead), which
	// command returns without parsing them again: each one's length and
	// where its arguments start in aheadArgs. cur is the index in ahead of
	// the command being run, or -1 if it was parsed on its own; curArgs
	// are its arguments.
	ahead     []aheadReq
	aheadArgs [][]byte
	next, cur int
	curArgs   [][]byte

	out     []byte // replies of the batch under way
	limit   int64  // most bytes of replies held for the client; 0: no limit
	mark    int64  // len(out) past which check must look: the limit, or the next chunk of mem
	mem     *Budget
	held    atomic.Int64 // bytes of out counted toward mem (budget.go)
	evicted atomic.Bool  // mem closed this client
	leaving atomic.Int64 // of held, what mem counts as on its way out since it closed this client
	over    bool         // the replies passed limit: the client is disconnected
	closing bool         // Close was called: close once the replies are out

	batchEnd bool // PeekPipeline reports nothing: the batch so far is to be committed

	wmu sync.Mutex  // serialises writes to the socket, and taking what they write from box
	iov net.Buffers // the last write's slices, kept for the next one's; wmu guards it
	seq uint64      // the read batch under way, for Later.seq; the connection's goroutine's
	box outbox      // replies that wait for a Later

	pushes pusher // out-of-band frames for the client (push.go)

	raw *RawWriter // writes a batch's replies to the socket; nil: through g.Conn

	netIn, netOut atomic.Int64 // bytes read and replies written, for INFO's total_net_*_bytes
}

// NewConn returns the connection of g, whose requests may be at most
// maxRequest bytes and whose replies held at most outLimit (0: no limit),
// counting them toward mem's budget (nil: none).
func NewConn(g *Guard, maxRequest, outLimit int64, mem *Budget) *Conn {
	rc := &Conn{g: g, p: wire.Parser{Max: maxRequest}, buf: make([]byte, readBufMin), limit: outLimit, cur: -1,
		raw: NewRawWriter(g.Conn), mem: mem}
	rc.mark = mem.mark(rc)
	rc.box.wake = make(chan struct{}, 1)
	return rc
}

// MaxAheadArgs is the most arguments of a request ParseAhead takes: a
// request with more is parsed when it runs, so that a connection that once
// sent a huge one does not keep a second copy of its arguments.
const MaxAheadArgs = 64

// aheadReq is a request ParseAhead parsed: its length, and where its
// arguments are, aheadArgs[from:from+args].
type aheadReq struct {
	n, from, args int
}

// ParseAhead parses up to max whole requests from the start of the unread
// bytes, for command to return in turn, so that the server can look at the
// batch's first requests (the server's prefetch) and each is still parsed once. It
// stops before an inline request and at a partial one, which command then
// parses as it comes to them, and at a malformed one, which it leaves for
// command to find again in its turn: the requests before it run first.
//
// The arguments of the requests parsed ahead are sliced there and then,
// into aheadArgs (wire.Parser.NextArgs), and command returns them as they
// are. The server reads again only once they have all run (Fill comes
// after command has returned nil); should a read come first, makeRoom
// forgets them before it moves the bytes under them, and command parses
// them again from the buffer.
func (rc *Conn) ParseAhead(max int) {
	rc.ahead, rc.aheadArgs, rc.next = rc.ahead[:0], rc.aheadArgs[:0], 0
	for i := rc.r; i < rc.w && len(rc.ahead) < max; {
		if !rc.p.InArray() && rc.buf[i] != '*' { // inline, perhaps partly read already
			return
		}
		from := len(rc.aheadArgs)
		n, args, err := rc.p.NextArgs(rc.buf[i:rc.w], rc.aheadArgs, MaxAheadArgs) // more: left to command, so that aheadArgs stays small
		if err != nil {
			rc.p.Restart()
			return
		}
		if n == 0 {
			return
		}
		rc.aheadArgs = args
		rc.ahead = append(rc.ahead, aheadReq{n: n, from: from, args: len(args) - from})
		i += n
	}
}

// AheadArg returns argument j of the request ahead[i], which must have it.
func (rc *Conn) AheadArg(i, j int) []byte {
	q := rc.ahead[i]
	return rc.aheadArgs[q.from+j]
}

// dropAhead forgets the requests parsed ahead, which were consumed otherwise.
func (rc *Conn) dropAhead() { rc.ahead, rc.next = rc.ahead[:0], 0 }

// forgetAhead forgets the requests parsed ahead and not yet run, and the
// parser's place in the partial request after them, so that command
// parses them again from rc.r, wherever the buffer then holds them.
func (rc *Conn) forgetAhead() {
	rc.dropAhead()
	rc.p.Restart()
}

// Command returns the next whole command in the buffer, or nil if there is
// none. Its arguments point into the buffer and are valid until the next call.
func (rc *Conn) Command() ([][]byte, error) {
	if rc.next < len(rc.ahead) {
		q := rc.ahead[rc.next]
		rc.cur = rc.next
		rc.next++
		rc.r += q.n
		rc.curArgs = rc.aheadArgs[q.from : q.from+q.args : q.from+q.args] // capped: an append must not reach the next request's
		return rc.curArgs, nil
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
			rc.curArgs = rc.args
			return rc.args, nil
		}
	}
	return nil, nil
}

// Idle reports whether the connection stands between requests.
func (rc *Conn) Idle() bool { return rc.r == rc.w && rc.p.Idle() }

// Fill reads more of the client's requests, waiting for them.
func (rc *Conn) Fill() error {
	rc.makeRoom()
	n, err := rc.g.readRequest(rc.buf[rc.w:], rc.Idle())
	rc.w += n
	rc.netIn.Add(int64(n))
	return err
}

// makeRoom gives the read buffer space at its end: it resets or shrinks an
// empty buffer, moves a partial request to the front, and doubles the
// buffer when a request fills it. The request cap bounds its growth, and it
// grows only as bytes arrive, never for a length merely announced.
func (rc *Conn) makeRoom() {
	switch {
	case rc.r == rc.w:
		rc.r, rc.w = 0, 0
		if len(rc.buf) > max(readBufMax, rc.keep) {
			rc.buf = make([]byte, readBufMin)
			clear(rc.aheadArgs[:cap(rc.aheadArgs)]) // they all point into the buffer dropped
			clear(rc.args[:cap(rc.args)])
			rc.curArgs = nil
		}
	case len(rc.buf)-rc.w < len(rc.buf)/8:
		if rc.next < len(rc.ahead) { // their arguments point at bytes about to move
			rc.forgetAhead()
		}
		rc.w = copy(rc.buf, rc.buf[rc.r:rc.w])
		rc.r = 0
		if rc.w > len(rc.buf)/2 {
			grown := make([]byte, 2*len(rc.buf))
			copy(grown, rc.buf[:rc.w])
			rc.buf = grown
		}
	}
}

// DropPipeline discards every request read and not yet run.
func (rc *Conn) DropPipeline() {
	rc.dropAhead()
	rc.r, rc.w = 0, 0
	rc.p = wire.Parser{Max: rc.p.Max, PreAuth: rc.p.PreAuth}
}

// PeekPipeline returns the whole requests read after the command being
// run, which the same batch will run. It does not consume them.
func (rc *Conn) PeekPipeline() [][]byte {
	if rc.batchEnd || rc.next == len(rc.ahead) && !rc.p.Idle() {
		return nil // the next request is partial, so nothing after it is whole either
	}
	var reqs [][]byte
	scratch := wire.Parser{Max: rc.p.Max}
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
func (rc *Conn) ReadPipeline() [][]byte {
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
func (rc *Conn) Close() error {
	rc.closing = true
	return nil
}

// The reply writers. They append to the batch's replies; past the output
// limit they drop them and mark the client for disconnection.

func (rc *Conn) WriteString(s string) { rc.out = redcon.AppendString(rc.out, s); rc.check() }
func (rc *Conn) WriteError(s string)  { rc.out = redcon.AppendError(rc.out, s); rc.check() }
func (rc *Conn) WriteBulk(b []byte)   { rc.out = redcon.AppendBulk(rc.out, b); rc.check() }
func (rc *Conn) WriteBulkString(s string) {
	rc.out = redcon.AppendBulkString(rc.out, s)
	rc.check()
}
func (rc *Conn) WriteInt(n int)       { rc.out = redcon.AppendInt(rc.out, int64(n)); rc.check() }
func (rc *Conn) WriteInt64(n int64)   { rc.out = redcon.AppendInt(rc.out, n); rc.check() }
func (rc *Conn) WriteArray(n int)     { rc.out = redcon.AppendArray(rc.out, n); rc.check() }
func (rc *Conn) WriteNull()           { rc.out = redcon.AppendNull(rc.out); rc.check() }
func (rc *Conn) WriteRaw(b []byte)    { rc.out = append(rc.out, b...); rc.check() }
func (rc *Conn) WriteUint64(n uint64) { rc.out = redcon.AppendUint(rc.out, n); rc.check() }
func (rc *Conn) WriteAny(v any)       { rc.out = redcon.AppendAny(rc.out, v); rc.check() }

// check enforces the output limit on the batch's replies, and counts them
// toward the budget of all clients' (budget.go): one comparison a reply.
func (rc *Conn) check() {
	if int64(len(rc.out)) > rc.mark {
		rc.grew()
	}
}

func (rc *Conn) grew() {
	if rc.limit > 0 && int64(len(rc.out)) > rc.limit {
		rc.overflow()
		return
	}
	rc.mem.grow(rc)
	rc.mark = rc.mem.mark(rc)
}

// overflow drops the replies held and marks the client for disconnection,
// as Redis does past client-output-buffer-limit.
func (rc *Conn) overflow() {
	rc.over, rc.out = true, rc.out[:0]
	if cap(rc.out) > readBufMax {
		rc.out = nil
	}
	rc.Released()
}

// Released takes the replies off the budget: they were written or dropped.
func (rc *Conn) Released() {
	if rc.held.Load() != 0 {
		rc.mem.release(rc)
	}
	rc.mark = rc.mem.mark(rc)
}

// WaitWrites waits for a write under way on another goroutine to finish.
func (rc *Conn) WaitWrites() {
	rc.wmu.Lock()
	//lint:ignore SA2001 an empty critical section: waiting for the holder is the point
	rc.wmu.Unlock()
}

// Flush writes the batch's replies, and every reply after them that is
// ready, waiting while the socket is full: a client that does not read
// stops being read. It keeps the output buffer for the next batch.
func (rc *Conn) Flush() error {
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
func (rc *Conn) checkDrained() {
	rc.wmu.Lock()
	defer rc.wmu.Unlock()
	rc.drainedLocked()
}

// drainedLocked calls drained if the box is empty; wmu must be held.
func (rc *Conn) drainedLocked() {
	rc.box.mu.Lock()
	empty := len(rc.box.segs) == 0
	rc.box.mu.Unlock()
	if empty {
		rc.pushesDrained() // pushes held behind replies in the box go out after them
	}
}

func (rc *Conn) writeOut() error {
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

// Writer writes RESP replies; Conn is one, and so is redcon's Writer.
type Writer interface {
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

var _ Writer = (*Conn)(nil)

// The socket Conn writes to, for the async writer.
func (rc *Conn) socket() net.Conn { return rc.g.Conn }

// Guard returns the connection's socket.
func (rc *Conn) Guard() *Guard { return rc.g }

// SetPreAuth sets whether requests are parsed under the caps before AUTH.
func (rc *Conn) SetPreAuth(pre bool) { rc.p.PreAuth = pre }

// Widen lets the connection take requests of up to maxRequest bytes, and
// keep an empty read buffer of up to keep bytes: a peer's forwarded batches
// are large and steady.
func (rc *Conn) Widen(keep int, maxRequest int64) {
	rc.keep = keep
	rc.p.Max = max(rc.p.Max, maxRequest)
}

// Over reports whether the replies passed the output limit: the client is
// to be disconnected.
func (rc *Conn) Over() bool { return rc.over }

// Closing reports whether Close was called.
func (rc *Conn) Closing() bool { return rc.closing }

// BatchEnd reports whether the batch so far is to be committed now: then
// PeekPipeline reports nothing, and nothing is parsed ahead.
func (rc *Conn) BatchEnd() bool { return rc.batchEnd }

// SetBatchEnd sets what BatchEnd reports.
func (rc *Conn) SetBatchEnd(end bool) { rc.batchEnd = end }

// Unread returns how many bytes were read and not yet run.
func (rc *Conn) Unread() int { return rc.w - rc.r }

// Ahead returns how many requests ParseAhead parsed.
func (rc *Conn) Ahead() int { return len(rc.ahead) }

// AheadArgs returns how many arguments the request parsed ahead i has.
func (rc *Conn) AheadArgs(i int) int { return rc.ahead[i].args }

// Current returns the index among those parsed ahead of the request being
// run, and its arguments; -1 if it was parsed on its own.
func (rc *Conn) Current() (int, [][]byte) { return rc.cur, rc.curArgs }

// Room makes room in the read buffer, and returns it, for a read; Filled
// then says how much of it the read filled.
func (rc *Conn) Room() []byte {
	rc.makeRoom()
	return rc.buf[rc.w:]
}

// Filled takes n bytes read into Room as the client's, and counts them.
func (rc *Conn) Filled(n int) {
	rc.w += n
	rc.netIn.Add(int64(n))
}

// Feed takes as much of p as the read buffer has room for, as if the
// client had sent it, and returns how much; tests and benchmarks run
// requests through it without a socket.
func (rc *Conn) Feed(p []byte) int {
	n := copy(rc.Room(), p)
	rc.w += n
	return n
}

// Discard drops the replies of the batch under way unwritten, for
// benchmarks that run batches without a socket.
func (rc *Conn) Discard() { rc.out = rc.out[:0] }

// Held returns the bytes of replies counted toward the budget.
func (rc *Conn) Held() int64 { return rc.held.Load() }

// Evicted reports whether the budget closed this client.
func (rc *Conn) Evicted() bool { return rc.evicted.Load() }

// NetIn returns the bytes read from the client.
func (rc *Conn) NetIn() int64 { return rc.netIn.Load() }

// NetOut returns the bytes of replies written to the client.
func (rc *Conn) NetOut() int64 { return rc.netOut.Load() }
