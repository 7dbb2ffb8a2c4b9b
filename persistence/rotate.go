package persistence

import (
	"errors"
	"fmt"
	"os"

	"github.com/rlstore/rlstore/shard"
)

// rotate creates segment gen. Shards move to it one by one with exportTo.
func (l *aof) rotate(gen uint64) (*segment, error) {
	seg, err := createSegment(l.fs, l.dir, gen, l.clock(), &l.fsyncs)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.segs = append(l.segs, seg)
	l.mu.Unlock()
	l.bytes.Add(seg.size)
	return seg, nil
}

// exportTo returns an exportFunc that moves each shard it exports to seg.
// The entries it returns are valid until its next call, which reuses their
// memory.
func (l *aof) exportTo(m *shard.Map, seg *segment) exportFunc {
	var buf shard.ExportBuffer
	return func(i int, dst []shard.Entry) []shard.Entry {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.route[i] = seg
		return m.ExportShardTo(i, dst, &buf)
	}
}

// routeAll sends every shard's changes to seg, finishing a rotation a failed
// snapshot left half done.
func (l *aof) routeAll(seg *segment) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.route {
		l.route[i] = seg
	}
}

// retire closes and deletes the segments older than gen, which a durable
// snapshot of generation gen has made redundant.
func (l *aof) retire(gen uint64) error {
	l.flushMu.Lock()
	defer l.flushMu.Unlock()
	l.mu.Lock()
	var old []*segment
	for len(l.segs) > 0 && l.segs[0].gen < gen {
		old = append(old, l.segs[0])
		l.segs = l.segs[1:]
	}
	l.mu.Unlock()
	var errs []error
	for _, seg := range old {
		if seg.f != nil {
			seg.f.Close()
		}
		if err := l.fs.Remove(seg.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("persistence: %w", err))
		}
		l.bytes.Add(-seg.size)
	}
	l.logged.Store(0)
	l.checkLocked()
	return errors.Join(append(errs, syncDir(l.fs, l.dir))...)
}

// dropEmpty undoes the rotation to seg, a failed snapshot's new segment, if
// no write to it ever succeeded past its header: it is closed and deleted,
// and every shard logs to the segment before it again. Otherwise a snapshot
// retried every few seconds on a full disk would leave a file and a
// descriptor each time. If a write to seg failed, its changes are lost from
// the log, so the segment before it takes over the failure: the log stays
// failed until a snapshot holds them. It reports whether it dropped seg.
func (l *aof) dropEmpty(seg *segment) bool {
	l.flushMu.Lock() // no flush is writing to seg now, and none has buffered for it
	defer l.flushMu.Unlock()
	defer l.checkLocked()
	l.mu.Lock()
	n := len(l.segs)
	if n < 2 || l.segs[n-1] != seg || seg.header == 0 || seg.whole != seg.header || len(seg.buf) != 0 {
		l.mu.Unlock()
		return false
	}
	prev := l.segs[n-2]
	if prev.err == nil {
		prev.err = seg.err
	}
	for i := range l.route {
		l.route[i] = prev
	}
	l.segs = l.segs[:n-1]
	l.mu.Unlock()
	if seg.f != nil {
		_ = seg.f.Close()
		seg.f = nil
	}
	_ = l.fs.Remove(seg.path) // best effort: an empty segment replays as nothing
	l.bytes.Add(-seg.size)
	return true
}
