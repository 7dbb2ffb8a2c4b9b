package shard

// The garbage collector's cost grows with the number of objects even when
// none holds a pointer: measured here, a forced GC over 59k pages of 7 KB took
// 30 ms and over 6k pages of 70 KB 3 ms. So full-size pages are cut from
// chunks holding a sixteenth of what the shard already holds, up to
// maxChunkPages. The pages of a chunk not yet handed out cost RSS as soon as
// the chunk is allocated from memory the heap had freed, which Go zeroes.
// With chunks of a quarter as many pages, 1M keys hit twice over the network
// cost 64 B a key of RSS; with a sixteenth, 60 B (loadtest/memrss.sh, no
// data dir). At 1M keys over 256 shards a shard gets no spare pages at all.
const (
	maxChunkPages = 64
	chunkFraction = 16
)

// chunk hands out pages of one size cut from larger allocations.
type chunk[T any] struct {
	spare []T // the rest of the last allocation
}

// page returns a page of size elements for a shard that already holds held
// elements in pages. allocated is how many elements it had to allocate for
// it, if any. A chunk is a chunkFraction of what the shard holds, in whole
// pages, whatever the page size: counting pages, small first pages
// included, made 128-slot pages come two to a chunk at 1M keys.
func (c *chunk[T]) page(size, held int) (page []T, allocated int) {
	if len(c.spare) < size {
		allocated = size * min(maxChunkPages, max(1, held/(chunkFraction*size)))
		c.spare = make([]T, allocated)
	}
	page, c.spare = c.spare[:size:size], c.spare[size:]
	return page, allocated
}
