package loadtest

import "time"

// runClosed keeps one batch of up to depth requests in flight at a time,
// the way redis-benchmark does: latency is from the batch's write to each
// reply.
func (w *worker) runClosed(b *budget) error {
	if w.route != nil && !w.split {
		return w.runPerNode(b)
	}
	for {
		n := b.claim(w.depth, time.Now())
		if n == 0 {
			return nil
		}
		if err := w.batchClosed(n); err != nil {
			return err
		}
		w.publish()
	}
}

func (w *worker) batchClosed(n int) error {
	if w.route != nil {
		return w.batchRouted(n)
	}
	w.buf = w.buf[:0]
	for i := range n {
		w.batch[i] = w.pick()
		w.encode(w.batch[i])
	}
	sent := time.Now()
	if err := w.cl.Write(w.buf); err != nil {
		w.lose(w.batch[:n], sent)
		return err
	}
	for i := range n {
		if err := w.cl.Read(&w.rep); err != nil {
			w.lose(w.batch[i:n], sent)
			return err
		}
		w.record(w.batch[i], sent, sent, time.Now(), w.wl.classify(&w.rep))
	}
	return nil
}
