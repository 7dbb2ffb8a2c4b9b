package resp

import (
	"sync"
)

// maxPushBytes bounds the out-of-band frames waiting for one client. A
// client that does not read its invalidations or its MONITOR stream is
// disconnected past it, as Redis disconnects a pub/sub client past its
// output buffer limit: dropping an invalidation silently would leave a stale cache.
const maxPushBytes = 32 << 20

// pusher holds the out-of-band frames other clients' goroutines send a
// client: RESP3 invalidate pushes, pub/sub messages for a RESP2 redirect, and
// MONITOR lines. It is the one place such frames reach a connection.
//
// Frames are written by a short-lived goroutine straight to the net.Conn,
// whose Write is safe alongside the connection's own flushes and writes
// each flush whole, so a frame never lands inside a reply. While the
// client's own goroutine holds (see HoldPushes), frames wait and are appended to
// its reply buffer after the reply: an invalidation must never reach a client
// before the reply it invalidates.
type pusher struct {
	mu       sync.Mutex // guards the fields below
	buf      []byte     // frames not yet written
	holding  bool       // the client's goroutine is computing a reply that frames must follow
	flushDue bool       // ReleasePushes ran: holding ends once the batch's replies are written
	drainDue bool       // the batch was flushed: holding ends once no reply waits in the outbox
	writing  bool       // a writer goroutine is running
	dead     bool       // the client fell behind and is being closed
}

// Push queues frame for the client from any goroutine.
func (rc *Conn) Push(frame []byte) {
	p := &rc.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	if len(p.buf)+len(frame) > maxPushBytes {
		p.dead, p.buf = true, nil
		_ = rc.g.Close() // its reads and writes then fail, and the server forgets it
		return
	}
	p.buf = append(p.buf, frame...)
	if !p.holding && !p.writing {
		p.writing = true
		go rc.writePushes()
	}
}

// writePushes writes queued frames until none is left or the client holds.
func (rc *Conn) writePushes() {
	p := &rc.pushes
	for {
		p.mu.Lock()
		if p.holding || len(p.buf) == 0 || p.dead {
			p.writing = false
			p.mu.Unlock()
			return
		}
		buf := p.buf
		p.buf = nil
		p.mu.Unlock()
		if _, err := rc.g.Write(buf); err != nil {
			p.mu.Lock()
			p.dead, p.buf, p.writing = true, nil, false
			p.mu.Unlock()
			return
		}
	}
}

// HoldPushes makes frames pushed from now on wait for ReleasePushes. The client's
// own goroutine calls it before a reply that a later frame must follow.
func (rc *Conn) HoldPushes() {
	p := &rc.pushes
	p.mu.Lock()
	p.holding = true
	p.flushDue, p.drainDue = false, false // the new reply is not written yet
	p.mu.Unlock()
}

// ReleasePushes ends a hold: the frames that waited go through w, the
// client's reply writer, after the replies already in it. Frames pushed
// after it still wait, until PushesFlushed: written straight to the socket,
// they would overtake the replies the batch has not written yet. Only the
// connection's own goroutine calls it, between top-level replies.
func (rc *Conn) ReleasePushes(w Writer) {
	p := &rc.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushDue = true
	if len(p.buf) > 0 && !p.dead {
		w.WriteRaw(p.buf)
		p.buf = nil
	}
}

// PushesFlushed ends a released hold once the batch's replies are written,
// and sends the frames that waited meanwhile. The batch's flush may only
// have moved replies into the outbox behind an unfinished Later: then the
// hold ends when the write that empties the outbox is done (pushesDrained).
func (rc *Conn) PushesFlushed() {
	p := &rc.pushes
	p.mu.Lock()
	if !p.flushDue {
		p.mu.Unlock()
		return
	}
	p.flushDue, p.drainDue = false, true
	p.mu.Unlock()
	rc.checkDrained()
}

// pushesDrained ends a hold PushesFlushed left for the outbox, now that no
// reply waits there and none is being written. The connection calls it with
// its write lock held, so no reply write runs alongside.
func (rc *Conn) pushesDrained() {
	p := &rc.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.drainDue {
		return
	}
	p.holding, p.drainDue = false, false
	if len(p.buf) > 0 && !p.dead && !p.writing {
		p.writing = true
		go rc.writePushes()
	}
}

// PushesHeld returns the bytes of frames waiting for the client.
func (rc *Conn) PushesHeld() int64 {
	rc.pushes.mu.Lock()
	defer rc.pushes.mu.Unlock()
	return int64(len(rc.pushes.buf))
}

// PushesWaiting reports whether frames wait for a hold to end (rather than
// for a writer already on its way).
func (rc *Conn) PushesWaiting() bool {
	rc.pushes.mu.Lock()
	defer rc.pushes.mu.Unlock()
	return len(rc.pushes.buf) > 0 && !rc.pushes.writing
}
