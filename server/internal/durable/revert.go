package durable

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
)

// maxPendingReverts bounds the changes kept waiting to be taken back.
const maxPendingReverts = 1 << 16

// change is one key's state before and after a write command, kept under
// appendfsync always until the batch's commit, so that a request whose
// commit failed keeps no charge: its client was told it failed.
type change struct {
	key, route    []byte // route: the key whose shard key lives in (nil: key itself)
	before, after state
}

// state is a key's entry, if it held one.
type state struct {
	e  shard.Entry
	ok bool
}

// ptr returns the entry, or nil if the key held no state.
func (st *state) ptr() *shard.Entry {
	if !st.ok {
		return nil
	}
	return &st.e
}

// reverts holds the changes of failed commits not yet taken back. A change
// is taken back only while the key still holds its after state: when two
// clients charged one key and both commits failed, the later charge must
// be taken back first, whichever client learns of its failure first.
type reverts struct {
	mu      sync.Mutex // guards pending
	pending []change
	n       atomic.Int64 // len(pending), read without the lock
}

// Hooks let a test stop a write command at a chosen point, to replay
// a race between clients; every field is nil outside tests.
type Hooks struct {
	Looked  func() // record has looked up the keys' states before running the command
	KeyBusy func() // a revert waits for a key another write command is changing
}

// entries returns keys' current states.
func (w *Writes) entries(keys [][]byte, route []byte, dst []state) []state {
	for _, k := range keys {
		e, ok := w.cfg.Store.Lookup(k, route)
		dst = append(dst, state{e, ok})
	}
	return dst
}

// record runs a write command, noting in b.changes what it changed,
// and reports whether it may have changed anything: a peek or a denial does
// not, and a batch of those needs no commit. Its keys are locked from the
// lookup before the command to the lookup after (see keyLocks), so that the
// two tell exactly what the command changed.
//
// The keys are those cm.Changes names; a write without them (FLUSHALL and
// RL.POLICY make their own writes durable before they reply) just runs.
func (w *Writes) record(b *Batch, cm *core.Command, args [][]byte) bool {
	var keys [][]byte
	var route []byte
	if cm.Changes != nil {
		keys, route = cm.Changes(args)
	}
	if keys == nil {
		if cm.Flags&core.FlagAllKeys != 0 { // no write command may run between another's lookups and find its key emptied
			b.stripes = w.keyLocks.lockAll(b.stripes[:0])
			defer w.keyLocks.unlock(b.stripes)
		}
		b.call(cm, args)
		return true
	}
	b.stripes = w.keyLocks.lock(keys, route, b.stripes[:0])
	defer w.keyLocks.unlock(b.stripes)
	n := len(keys)
	b.looked = w.entries(keys, route, b.looked[:0])
	if w.Hooks.Looked != nil {
		w.Hooks.Looked()
	}
	b.call(cm, args)
	b.looked = w.entries(keys, route, b.looked)
	changed := false
	for i := range keys {
		before, after := b.looked[i], b.looked[n+i]
		if shard.SameEntry(before.ptr(), after.ptr()) {
			continue
		}
		if !changed && route != nil {
			route = bytes.Clone(route) // the request's bytes are the connection's
		}
		k := bytes.Clone(keys[i])
		before.e.Key, after.e.Key = k, k
		b.changes = append(b.changes, change{key: k, route: route, before: before, after: after})
		changed = true
	}
	clear(b.looked)
	return changed
}

// revert takes back the changes of a batch whose commit failed, with every
// other failed change still waiting, latest first, until none can be.
func (w *Writes) revert(changes []change) {
	r := &w.reverts
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending = append(r.pending, changes...)
	for progress := true; progress; {
		progress = false
		var kept []change
		for i := len(r.pending) - 1; i >= 0; i-- {
			ch := r.pending[i]
			mu := w.keyLocks.lockChange(&ch, w.Hooks.KeyBusy)
			ok := w.revertOne(&ch)
			mu.Unlock()
			if ok {
				w.reverted.Add(1)
				progress = true
				continue
			}
			kept = append(kept, ch)
		}
		slices.Reverse(kept) // oldest first again
		r.pending = kept
	}
	if n := len(r.pending) - maxPendingReverts; n > 0 {
		r.pending = slices.Clone(r.pending[n:])
	}
	r.n.Store(int64(len(r.pending)))
}

// revertOne takes back one change if its key still holds the change's
// after state. An after state that restricts nothing (a lease released, a
// reservation settled, a window emptied) may be freed by the store's
// sweep at any moment, and the sweep takes no key lock: a key freed so
// still holds what the change left, as far as any request can tell, and
// gets its before state back.
func (w *Writes) revertOne(ch *change) bool {
	if w.cfg.Store.Revert(ch.key, ch.route, ch.before.ptr(), ch.after.ptr()) {
		return true
	}
	return ch.after.ok && ch.after.e.Expiry() <= w.now() &&
		w.cfg.Store.Revert(ch.key, ch.route, ch.before.ptr(), nil)
}

// now is the time in unix nanoseconds, by the server's clock.
func (w *Writes) now() int64 {
	if w.cfg.Now != nil {
		return w.cfg.Now()
	}
	return time.Now().UnixNano()
}

// settled drops the changes still waiting once a commit has succeeded:
// whatever they left is durable now.
func (w *Writes) settled() {
	r := &w.reverts
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	r.pending = nil
	r.n.Store(0)
	r.mu.Unlock()
}
