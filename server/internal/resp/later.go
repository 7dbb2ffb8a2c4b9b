package resp

import (
	"net"
	"sync"
)

// How many replies may wait behind an unfinished Later, and how many bytes,
// before the connection stops reading requests until they go out (WaitBox).
const (
	HoldReplies = 1024
	HoldBytes   = 1 << 20
)

// Later is the place of one reply that another goroutine completes: a
// command that forwards its request to another node, say, takes a Later
// instead of writing its reply, and returns at once, so that the
// connection goes on reading and running the client's next requests. Their
// replies are held back until the Later is finished, so the client gets
// every reply in the order it sent the requests. Finish must be called
// exactly once; until it is, the connection does not close by itself
// (a forced stop or CLIENT KILL still closes it).
type Later struct {
	rc   *Conn
	seq  uint64 // the read batch it belongs to (Conn.seq)
	pre  []byte // replies written before this one's place was taken: ready at once
	data []byte
	done bool
}

// Later reserves the place of the reply to the command being run. The
// command must not write a reply of its own. (The server's commands take
// it through a method that first commits the replies a commit holds, so
// that they stay in order.)
func (rc *Conn) Later() *Later {
	pre := rc.takeOut()
	rc.box.mu.Lock()
	l := rc.box.newLocked()
	l.rc, l.seq, l.pre = rc, rc.seq, pre
	rc.box.appendLocked(l)
	rc.box.mu.Unlock()
	return l
}

// Finish completes the reply with reply, one or more whole RESP frames; it
// is safe to call from any goroutine, and never waits for the client. The
// reply goes out once the replies before it have, and the rest of its read
// batch's are ready too: a batch's replies go out in one write.
func (l *Later) Finish(reply []byte) {
	FinishAll([]*Later{l}, [][]byte{reply})
}

// FinishAll finishes ls, Laters of one connection, with replies[i] for
// ls[i], as Finish would one by one, but under one lock and with at most
// one write started.
func FinishAll(ls []*Later, replies [][]byte) {
	if len(ls) == 0 {
		return
	}
	rc := ls[0].rc
	rc.box.mu.Lock()
	for i, l := range ls {
		l.data, l.done = replies[i], true
		rc.box.bytes += int64(len(replies[i]))
	}
	start := rc.box.writableLocked() && !rc.box.async
	rc.box.async = rc.box.async || start
	rc.box.mu.Unlock()
	rc.box.signal()
	if start {
		rc.writeSoon()
	}
}

// FlushBatch writes a read batch's replies at its end, like Flush, unless
// some wait behind an unfinished Later: then they all stay in the box, and
// the last Finish writes them together, one write where flush would add
// another.
func (rc *Conn) FlushBatch() error {
	rc.box.mu.Lock()
	wait := rc.box.unfinishedLocked()
	if wait && len(rc.out) > 0 {
		rc.box.appendDoneLocked(rc.seq, rc.takeOut())
	}
	rc.box.mu.Unlock()
	rc.seq++
	if wait {
		return nil
	}
	return rc.Flush()
}

// unfinishedLocked reports whether a Later in the box is not finished.
func (b *outbox) unfinishedLocked() bool {
	for _, l := range b.segs {
		if !l.done {
			return true
		}
	}
	return false
}

// writeSoon writes what is ready in the box, for FinishAll. When the
// client's socket takes it all at once, the usual case for a client that
// reads its replies, it is written right here, on the goroutine that
// finished the Later; what the socket does not take, a goroutine of its
// own writes (writeRest), since Finish must never wait for the client.
// Writing here spares each such batch a goroutine, and the thread woken
// to run it.
func (rc *Conn) writeSoon() {
	if !rc.wmu.TryLock() {
		go rc.writeAsync() // a write is under way: it waits for that one
		return
	}
	rest := rc.takeReady()
	if rc.raw != nil { // else TLS: only a write that may wait will do
		var err error
		if rest, err = rc.raw.WriteNow(rest); err != nil {
			_ = rc.g.Close() // the connection's goroutine finds it closed
			rc.wrote()
			return
		}
	}
	if len(rest) > 0 {
		go rc.writeRest(rest) // it holds wmu from here
		return
	}
	rc.wrote()
}

// writeAsync writes what is ready in the box, waiting for the client, for
// Finish, which must not wait for the client itself.
func (rc *Conn) writeAsync() {
	rc.wmu.Lock()
	rc.writeRest(rc.takeReady())
}

// takeReady takes from the box the replies ready to go out; wmu is held.
// Their slices are kept in rc.iov's array for the next write, so they are
// valid until wmu is released.
func (rc *Conn) takeReady() net.Buffers {
	rc.box.mu.Lock()
	rc.box.async = false
	bufs := rc.box.takeLocked(rc.iov[:0])
	rc.box.mu.Unlock()
	rc.iov = bufs[:0]
	var n int
	for _, b := range bufs {
		n += len(b)
	}
	rc.netOut.Add(int64(n))
	return bufs
}

// writeRest writes rest, waiting for the client, while holding wmu, which
// its caller took, and releases it.
func (rc *Conn) writeRest(rest net.Buffers) {
	if len(rest) > 0 {
		if _, err := rest.WriteTo(rc.socket()); err != nil {
			_ = rc.g.Close() // the connection's goroutine finds it closed
		}
	}
	rc.wrote()
}

// wrote ends a write made under wmu, and releases it.
func (rc *Conn) wrote() {
	rc.drainedLocked()
	rc.wmu.Unlock()
	rc.box.signal()
}

// outbox holds, in order, replies that wait for an unfinished Later, and
// the Laters themselves.
type outbox struct {
	mu    sync.Mutex // guards the fields below
	segs  []*Later   // in order; the leading finished ones are ready to write
	bytes int64      // bytes held in segs
	async bool       // a writeAsync is on its way
	wake  chan struct{}
	free  []*Later // Laters written out, for reuse: a forwarded request takes one
}

// maxFreeLaters bounds the Laters a connection keeps for reuse.
const maxFreeLaters = 256

// newLocked returns a cleared Later, a reused one if it can.
func (b *outbox) newLocked() *Later {
	if n := len(b.free); n > 0 {
		l := b.free[n-1]
		b.free[n-1] = nil
		b.free = b.free[:n-1]
		return l
	}
	return &Later{}
}

func (b *outbox) appendLocked(l *Later) {
	b.segs = append(b.segs, l)
	b.bytes += int64(len(l.pre) + len(l.data))
}

// appendDoneLocked appends replies that are ready, of read batch seq.
func (b *outbox) appendDoneLocked(seq uint64, data []byte) {
	l := b.newLocked()
	l.seq, l.data, l.done = seq, data, true
	b.appendLocked(l)
}

// recycleLocked keeps a Later that has been written, and that nothing
// else refers to any more, for reuse. Every Later is the box's own: the
// only holders of one (a remoteBatch, Finish's caller) let go of it once
// it is finished.
func (b *outbox) recycleLocked(l *Later) {
	*l = Later{}
	if len(b.free) < maxFreeLaters {
		b.free = append(b.free, l)
	}
}

// writableLocked reports whether every reply of the oldest read batch in
// the box is ready, so that a write sends that batch's replies whole.
func (b *outbox) writableLocked() bool {
	if len(b.segs) == 0 {
		return false
	}
	head := b.segs[0].seq
	for _, l := range b.segs {
		if l.seq != head {
			break
		}
		if !l.done {
			return false
		}
	}
	return true
}

// readyLocked reports whether the box holds bytes that can be written now.
func (b *outbox) readyLocked() bool {
	return len(b.segs) > 0 && (b.segs[0].done || len(b.segs[0].pre) > 0)
}

// takeLocked removes the leading finished segments, and what comes before
// the first unfinished one, and appends their bytes to bufs.
func (b *outbox) takeLocked(bufs net.Buffers) net.Buffers {
	i := 0
	for ; i < len(b.segs); i++ {
		l := b.segs[i]
		if len(l.pre) > 0 {
			bufs = append(bufs, l.pre)
			b.bytes -= int64(len(l.pre))
			l.pre = nil
		}
		if !l.done {
			break
		}
		if len(l.data) > 0 {
			bufs = append(bufs, l.data)
			b.bytes -= int64(len(l.data))
		}
		b.recycleLocked(l)
	}
	clear(b.segs[:i])
	b.segs = append(b.segs[:0], b.segs[i:]...)
	return bufs
}

// takeOut hands the replies in out to the box. The slice handed over is
// capped, and out goes on in the rest of its buffer, so that the replies
// after a Later seldom need a buffer of their own.
func (rc *Conn) takeOut() []byte {
	n := len(rc.out)
	if n == 0 {
		return nil
	}
	out := rc.out[:n:n]
	rc.out = rc.out[n:]
	if cap(rc.out) < 256 {
		rc.out = make([]byte, 0, min(max(2*cap(out), 1024), 16<<10))
	}
	return out
}

// signal wakes a connection waiting for its box to empty.
func (b *outbox) signal() {
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// held reports how many segments and bytes wait in the box.
func (b *outbox) held() (int, int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.segs), b.bytes
}

// WaitBox waits, while the connection is open, until the box holds at most
// segs segments and bytes bytes: until Laters are finished and written.
func (rc *Conn) WaitBox(segs int, bytes int64) bool {
	for {
		n, b := rc.box.held()
		if n <= segs && b <= bytes {
			return true
		}
		if rc.box.readyNow() {
			if rc.Flush() != nil {
				return false
			}
			continue
		}
		select {
		case <-rc.box.wake:
		case <-rc.g.done:
			return false
		}
	}
}

func (b *outbox) readyNow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.readyLocked()
}

// Boxed reports how many replies and Laters, and how many bytes, wait
// behind an unfinished Later.
func (rc *Conn) Boxed() (int, int64) { return rc.box.held() }
