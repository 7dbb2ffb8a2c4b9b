package persistence

import (
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/persistence/vfs"
)

// fsyncBounds are the upper bounds, in microseconds, of the fsync latency
// buckets (one more bucket holds the rest): from a page-cache-only file
// system's tens of microseconds to a saturated disk's seconds.
var fsyncBounds = [...]int64{50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000, 5000000}

// FsyncBuckets is the number of buckets in FsyncStats.Buckets.
const FsyncBuckets = len(fsyncBounds) + 1

// FsyncBound returns the upper bound of bucket i of FsyncStats.Buckets, or
// 0 for the last bucket, which has none.
func FsyncBound(i int) time.Duration {
	if i < 0 || i >= len(fsyncBounds) {
		return 0
	}
	return time.Duration(fsyncBounds[i]) * time.Microsecond
}

// FsyncStats counts fsyncs of one kind of file and how long they took.
// Failed fsyncs are counted and timed too: a disk that fails slowly shows.
type FsyncStats struct {
	Count   int64         // fsyncs, failed or not
	Errors  int64         // fsyncs that failed
	Total   time.Duration // time spent in them, summed
	Buckets [FsyncBuckets]int64
	// Buckets[i] counts the fsyncs that took at most FsyncBound(i) and more
	// than FsyncBound(i-1); the last one those longer than every bound.
}

// fsyncTimer times fsyncs with atomics only, so the commit path under
// appendfsync always takes no lock and allocates nothing for it.
type fsyncTimer struct {
	count   atomic.Int64
	errors  atomic.Int64
	nanos   atomic.Int64
	buckets [FsyncBuckets]atomic.Int64
}

// sync fsyncs f and records how long it took. A nil t only fsyncs.
func (t *fsyncTimer) sync(f vfs.File) error {
	if t == nil {
		return f.Sync()
	}
	start := time.Now()
	err := f.Sync()
	t.observe(time.Since(start), err != nil)
	return err
}

// observe records one fsync that took d.
func (t *fsyncTimer) observe(d time.Duration, failed bool) {
	us := d.Microseconds()
	i := 0
	for i < len(fsyncBounds) && us > fsyncBounds[i] {
		i++
	}
	t.buckets[i].Add(1)
	t.nanos.Add(int64(d))
	if failed {
		t.errors.Add(1)
	}
	t.count.Add(1)
}

// stats reads t. Its figures are read one by one, so a scrape during an
// fsync may see it in some and not yet in others.
func (t *fsyncTimer) stats() FsyncStats {
	s := FsyncStats{Count: t.count.Load(), Errors: t.errors.Load(), Total: time.Duration(t.nanos.Load())}
	for i := range t.buckets {
		s.Buckets[i] = t.buckets[i].Load()
	}
	return s
}
