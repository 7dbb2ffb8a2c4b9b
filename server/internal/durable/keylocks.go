package durable

import (
	"slices"
	"sync"
)

// keyStripes is how many locks the keys that write commands change are spread over.
const keyStripes = 256

// keyLocks keep a write command's lookups and its run whole under
// appendfsync always (see record): no other write command, and no
// revert of a failed commit, changes its keys between them. Otherwise a
// revert could take another client's charge back between the lookup before
// a charge and the charge, which then remade the very state that lookup had
// seen: the charge went unnoticed, and was acknowledged without a commit.
// And the state looked up before a charge could be older than the one it
// was made on, so that its revert took back another client's charge too.
type keyLocks struct {
	mu [keyStripes]sync.Mutex
}

// stripe returns the lock of key: FNV-1a, which is cheap for short keys.
func stripe(key []byte) uint8 {
	h := uint32(2166136261)
	for _, b := range key {
		h = (h ^ uint32(b)) * 16777619
	}
	return uint8(h ^ h>>8 ^ h>>16 ^ h>>24)
}

// lock locks the stripes of keys, or of route, which they share if it is
// not nil, in ascending order so that two commands never wait for each
// other, and returns them, appended to dst, for unlock.
func (l *keyLocks) lock(keys [][]byte, route []byte, dst []uint8) []uint8 {
	switch {
	case route != nil:
		dst = append(dst, stripe(route))
	default:
		for _, k := range keys {
			dst = append(dst, stripe(k))
		}
		slices.Sort(dst)
		dst = slices.Compact(dst)
	}
	for _, i := range dst {
		l.mu[i].Lock()
	}
	return dst
}

// lockAll locks every stripe, for a command that changes every key (FLUSHALL).
func (l *keyLocks) lockAll(dst []uint8) []uint8 {
	for i := range keyStripes {
		l.mu[i].Lock()
		dst = append(dst, uint8(i))
	}
	return dst
}

// unlock unlocks what lock locked.
func (l *keyLocks) unlock(held []uint8) {
	for _, i := range held {
		l.mu[i].Unlock()
	}
}

// lockChange locks the stripe of a change being taken back. busy, if not
// nil, is told when it must wait for a write command (tests).
func (l *keyLocks) lockChange(ch *change, busy func()) *sync.Mutex {
	k := ch.key
	if ch.route != nil {
		k = ch.route
	}
	mu := &l.mu[stripe(k)]
	if !mu.TryLock() {
		if busy != nil {
			busy()
		}
		mu.Lock()
	}
	return mu
}
