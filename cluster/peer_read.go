package cluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/rlstore/rlstore/internal/wire"
)

// Sizes of the slabs a connection's reader carves replies from: one
// allocation serves many batches, and the garbage collector frees a slab
// once no reply in it is referenced.
const (
	replySlab = 64 << 10 // bytes of replies
	sliceSlab = 1024     // reply slices
)

// replyReader reads the replies of a connection's batches. Replies whose
// bytes are all buffered are found by scanning the buffer and copied out
// in one go; it waits for the socket, under the batch's deadline, only
// when none is whole.
type replyReader struct {
	r      *bufio.Reader
	slab   []byte   // replies are appended here; the bytes before len are handed out
	slices [][]byte // the batches' reply slices are carved from here
	ends   []int    // scratch: where each reply of a chunk ends
}

// readLoop matches replies to calls in order until the connection fails.
// Each call's replies must all have come by its deadline.
func (pc *peerConn) readLoop(r *bufio.Reader) {
	rr := &replyReader{r: r}
	answered := false
	for c := range pc.pending {
		replies, err := rr.read(c.n, func() { _ = pc.nc.SetReadDeadline(c.deadline) })
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded) && !answered && c.deadline.Before(pc.fairFrom):
				err = fmt.Errorf("%w: %w: %w", ErrNoAnswerYet, errNoReplyInTime, context.DeadlineExceeded)
			case errors.Is(err, os.ErrDeadlineExceeded):
				err = fmt.Errorf("%w: %w", errNoReplyInTime, context.DeadlineExceeded)
			}
			pc.close(err)
			c.r.Replies(nil, pc.failure())
			pc.failAll()
			return
		}
		answered = true
		c.r.Replies(replies, nil)
	}
}

// read returns the next n replies. wait is called once before the first
// read from the socket: it sets the batch's deadline.
func (rr *replyReader) read(n int, wait func()) ([][]byte, error) {
	replies := rr.take(n)
	waited := false
	for got := 0; got < n; {
		k, err := rr.scan(replies[got:])
		if err != nil {
			return nil, err
		}
		if k > 0 {
			got += k
			continue
		}
		if !waited {
			wait()
			waited = true
		}
		if rr.r.Buffered() < rr.r.Size() {
			// Part of a reply is buffered, or none: wait for more bytes.
			if _, err := rr.r.Peek(rr.r.Buffered() + 1); err != nil {
				return nil, err
			}
			continue
		}
		// A reply larger than the buffer: read it piece by piece.
		start := len(rr.slab)
		if rr.slab, err = wire.ReadReply(rr.r, rr.slab); err != nil {
			return nil, err
		}
		replies[got] = rr.slab[start:len(rr.slab):len(rr.slab)]
		got++
		if cap(rr.slab) > 4*replySlab {
			rr.slab = nil // a large reply's slab is not kept for the small ones after it
		}
	}
	return replies, nil
}

// take carves n reply slices from the slab of slices.
func (rr *replyReader) take(n int) [][]byte {
	if len(rr.slices)+n > cap(rr.slices) {
		rr.slices = make([][]byte, 0, max(sliceSlab, n))
	}
	s := rr.slices[len(rr.slices) : len(rr.slices)+n : len(rr.slices)+n]
	rr.slices = rr.slices[:len(rr.slices)+n]
	return s
}

// scan fills dst, in order, with the replies that are whole in the read
// buffer, up to len(dst), and returns how many it found.
func (rr *replyReader) scan(dst [][]byte) (int, error) {
	buf, _ := rr.r.Peek(rr.r.Buffered())
	rr.ends = rr.ends[:0]
	size := 0
	for len(rr.ends) < len(dst) {
		k, err := wire.ReplyEnd(buf[size:])
		if err != nil {
			return 0, err
		}
		if k == 0 {
			break
		}
		size += k
		rr.ends = append(rr.ends, size)
	}
	if size == 0 {
		return 0, nil
	}
	if len(rr.slab)+size > cap(rr.slab) {
		rr.slab = make([]byte, 0, max(replySlab, size))
	}
	base := len(rr.slab)
	rr.slab = append(rr.slab, buf[:size]...)
	start := base
	for i, end := range rr.ends {
		dst[i], start = rr.slab[start:base+end:base+end], base+end
	}
	_, _ = rr.r.Discard(size)
	return len(rr.ends), nil
}
