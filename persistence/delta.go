package persistence

import (
	"github.com/rlstore/rlstore/shard"
)

// Cut makes e, a key's state drained from a Map, a delta (shard.Entry.Kept)
// when it is a Slide or Log state with counters stamped before since (unix
// nanoseconds): the delta ships only its counters from the last one stamped
// at or before since's unit on, and leaves the older ones to the backup's
// copy. Give since a time no change still to ship can be stamped before:
// a change adds to a key's last counter or adds counters after it (Slide's
// coarse counters start before the change), and drops counters only from
// the front, which the backup learns from the count it keeps.
//
// e.Counters stays whole: AppendDeltaChunks writes the delta, and
// AppendEntriesChunks the whole entry.
func Cut(e *shard.Entry, since int64) {
	e.Kept, e.Digest = 0, 0
	k := e.Params.Kind
	if !k.Stamped() || since <= 0 || len(e.Counters) < 2 {
		return
	}
	unit := since / int64(k.Unit())
	j := len(e.Counters) - 1
	for j > 0 {
		if at, _ := k.SplitCounter(e.Counters[j]); at <= unit {
			break
		}
		j--
	}
	if j == 0 || j > maxDeltaKept {
		return
	}
	e.Kept, e.Digest = uint32(j), shard.CounterDigest(e.Counters)
}
