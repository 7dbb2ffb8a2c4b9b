package loadtest

import (
	"time"
)

// pending is a request written but not yet answered.
type pending struct {
	key  uint64
	due  time.Time // when the schedule wanted it sent
	sent time.Time // when it was written
}

// openEarly is how far ahead of its due time an open-loop request may be
// written. Go's timers wake up to about a millisecond late; writing what is
// due within the next millisecond together keeps most of that lateness out
// of the measurement. Latency counts from the earlier of due and written: a
// late write is charged from its due time, an early one from its write.
const openEarly = time.Millisecond

// maxInFlight bounds the requests one open-loop connection has outstanding.
// A writer that reaches it waits, but latency still counts from each
// request's due time, so the wait is measured rather than hidden.
const maxInFlight = 1 << 14

// runOpen sends requests on a fixed schedule, interval apart starting at
// start, writing every request that is due (or due within openEarly) in one
// batch of at most depth, while a second goroutine reads the replies. It
// measures latency from each request's due time (or its write, if that was
// earlier), so a server that stalls is charged for the queue it causes: no
// coordinated omission.
func (w *worker) runOpen(b *budget, start time.Time, interval time.Duration) error {
	inflight := make(chan pending, maxInFlight)
	readErr := make(chan error, 1)
	go func() { readErr <- w.readOpen(inflight) }()
	werr := w.writeOpen(b, start, interval, inflight)
	close(inflight)
	rerr := <-readErr
	if werr != nil {
		return werr
	}
	return rerr
}

func (w *worker) writeOpen(b *budget, next time.Time, interval time.Duration, inflight chan<- pending) error {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := time.Now()
		horizon := now.Add(openEarly)
		if wait := next.Sub(horizon); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-b.ctx.Done():
				return nil
			}
			continue
		}
		due := min(int(horizon.Sub(next)/interval)+1, w.depth)
		n := b.claim(due, now)
		if n == 0 {
			return nil
		}
		var err error
		if next, err = w.batchOpen(n, next, interval, inflight); err != nil {
			return err
		}
	}
}

func (w *worker) batchOpen(n int, next time.Time, interval time.Duration, inflight chan<- pending) (time.Time, error) {
	w.buf = w.buf[:0]
	for i := range n {
		w.batch[i] = w.pick()
		w.encode(w.batch[i])
	}
	sent := time.Now()
	if err := w.cl.Write(w.buf); err != nil {
		return next, err
	}
	for i := range n {
		inflight <- pending{key: w.batch[i], due: next, sent: sent}
		next = next.Add(interval)
	}
	return next, nil
}

// readOpen reads one reply per pending request until the writer is done.
// The reader owns hist, tally and events while it runs. After an error it
// keeps draining so that the writer never blocks, and marks the rest unknown.
func (w *worker) readOpen(inflight <-chan pending) error {
	var err error
	for p := range inflight {
		if err == nil {
			err = w.cl.Read(&w.rep)
		}
		if err != nil {
			w.lose([]uint64{p.key}, p.sent)
			continue
		}
		w.lag.Record(p.sent.Sub(p.due))
		start := p.due
		if p.sent.Before(start) {
			start = p.sent
		}
		w.record(p.key, start, p.sent, time.Now(), w.wl.classify(&w.rep))
		w.publish()
	}
	return err
}
