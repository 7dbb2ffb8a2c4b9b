package region

import "unsafe"

// The region table's memory counts in the server's --maxmemory, as the
// key store's and the policies' do: Bytes is about what the table holds,
// kept up to date key by key (resize), and a received entry that needs a
// new key is refused, as past MaxRemote, when the room function set by
// SetRoom says that key does not fit (cap.go).

// keyOverhead is about what a key costs besides its name and its
// buckets, with perRegion for each region: the key struct, its entries
// in the table's maps (the keys, and while it has news, dirty, measure,
// mirror and each peer's unacked) and the three slices per region it
// keeps. TestBytesTracksHeap holds the estimate to the Go heap.
const (
	keyOverhead = 320
	perRegion   = 96
	bucketBytes = 16 // a bucket: its id and its units
)

// keyBytes returns about what k holds in memory. Buckets count by the
// capacity of their slices: a pruned slice keeps its array.
func (s *Store) keyBytes(k *key) int64 {
	c := cap(k.own)
	for p := range k.seen {
		c += cap(k.seen[p]) + cap(k.acked[p]) + cap(k.sent[p])
	}
	return s.newKeyBytes(len(k.name)) + bucketBytes*int64(c)
}

// newKeyBytes returns about what a new key of a name of n bytes holds,
// before its first bucket.
func (s *Store) newKeyBytes(n int) int64 {
	return keyOverhead + perRegion*int64(s.cfg.Regions) + int64(n)
}

// resize brings k's part of Bytes up to date after its buckets changed.
func (s *Store) resize(k *key) {
	nb := s.keyBytes(k)
	s.bytes += nb - k.bytes
	k.bytes = nb
}

// linkEntryBytes is what an entry a link keeps costs: a batch's entries
// (and its echo's) are kept in the link's ring of the last 64 batches
// until the batch is acknowledged, to credit the acknowledgement. Its key
// shares the table's name, so only the Entry itself counts.
const linkEntryBytes = int64(unsafe.Sizeof(Entry{}))

// keep counts the entries a ring slot holds from now on instead of those
// it held: the last 64 batches each link keeps until acknowledged (which
// are also the batches in flight: the caller's Batch shares the slot's
// entries).
func (s *Store) keep(sb *sentBatch, entries int) {
	s.bytes += linkEntryBytes * int64(entries-sb.kept)
	sb.kept = entries
}

// Bytes returns about how many bytes the table holds, with the entries its
// links keep until they are acknowledged.
func (s *Store) Bytes() int64 { return s.bytes }

// SetRoom sets the function that says whether a table of n bytes fits in
// the memory the caller bounds (the server's --maxmemory): a received
// entry for a new key is refused unless the table with it does. It is
// called during Receive, with the table's bytes as they grow. nil (the
// default) is no bound but MaxRemote.
func (s *Store) SetRoom(room func(n int64) bool) { s.room = room }
