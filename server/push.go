package server

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
// MONITOR lines. It is the one place such frames reach a connection, so a
// transport that owns the connection differently re-implements client.push
// and client.releasePushes and nothing else.
//
// Frames are written by a short-lived goroutine straight to the net.Conn,
// whose Write is safe alongside the connection's own flushes and writes
// each flush whole, so a frame never lands inside a reply. While the
// client's own goroutine holds (see holdPushes), frames wait and are appended to
// its reply buffer after the reply: an invalidation must never reach a client
// before the reply it invalidates.
type pusher struct {
	mu       sync.Mutex // guards the fields below
	buf      []byte     // frames not yet written
	holding  bool       // the client's goroutine is computing a reply that frames must follow
	flushDue bool       // releasePushes ran: holding ends once the batch's replies are written
	drainDue bool       // the batch was flushed: holding ends once no reply waits in the outbox
	writing  bool       // a writer goroutine is running
	dead     bool       // the client fell behind and is being closed
}

// push queues frame for c from any goroutine.
func (c *client) push(frame []byte) {
	p := &c.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return
	}
	if len(p.buf)+len(frame) > maxPushBytes {
		p.dead, p.buf = true, nil
		_ = c.g.Close() // its reads and writes then fail, and the server forgets it
		return
	}
	p.buf = append(p.buf, frame...)
	if !p.holding && !p.writing {
		p.writing = true
		go c.writePushes()
	}
}

// writePushes writes queued frames until none is left or the client holds.
func (c *client) writePushes() {
	p := &c.pushes
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
		if _, err := c.g.Write(buf); err != nil {
			p.mu.Lock()
			p.dead, p.buf, p.writing = true, nil, false
			p.mu.Unlock()
			return
		}
	}
}

// holdPushes makes frames pushed from now on wait for releasePushes. The client's
// own goroutine calls it before a reply that a later frame must follow.
func (c *client) holdPushes() {
	c.pushes.mu.Lock()
	c.pushes.holding = true
	c.pushes.flushDue, c.pushes.drainDue = false, false // the new reply is not written yet
	c.pushes.mu.Unlock()
}

// releasePushes ends a hold: the frames that waited go into c's reply buffer
// after the replies already in it. Frames pushed after it still wait, until
// pushesFlushed: written straight to the socket, they would overtake the
// replies the batch has not written yet. Only c's own goroutine calls it,
// between top-level replies.
func (c *client) releasePushes() {
	p := &c.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushDue = true
	if len(p.buf) > 0 && !p.dead {
		c.conn.WriteRaw(p.buf)
		p.buf = nil
	}
}

// pushesFlushed ends a released hold once the batch's replies are written,
// and sends the frames that waited meanwhile. The endBatch flush may only
// have moved replies into the outbox behind an unfinished Later: then the
// hold ends when the write that empties the outbox is done (pushesDrained).
func (c *client) pushesFlushed() {
	p := &c.pushes
	p.mu.Lock()
	if !p.flushDue {
		p.mu.Unlock()
		return
	}
	p.flushDue, p.drainDue = false, true
	p.mu.Unlock()
	c.rc.checkDrained()
}

// pushesDrained ends a hold pushesFlushed left for the outbox, now that no
// reply waits there and none is being written. The connection calls it with
// its write lock held, so no reply write runs alongside.
func (c *client) pushesDrained() {
	p := &c.pushes
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.drainDue {
		return
	}
	p.holding, p.drainDue = false, false
	if len(p.buf) > 0 && !p.dead && !p.writing {
		p.writing = true
		go c.writePushes()
	}
}
