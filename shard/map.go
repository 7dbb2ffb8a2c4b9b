package shard

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/cespare/xxhash/v2"
	"github.com/rlstore/rlstore/window"
)

// Sentinel errors. The server turns them into Redis replies.
var (
	ErrWrongType = errors.New("shard: key holds another algorithm's state")
	ErrFull      = errors.New("shard: key or memory limit reached")
)

// Config configures a Map. The zero Config is valid: every default is filled in by New.
type Config struct {
	Shards    int                 // lock stripes, a power of two; default 256
	MaxKeys   int64               // 0: no limit
	MaxMemory int64               // bytes of key state; 0: no limit
	Grace     time.Duration       // how long past expiry Sweep keeps a key; default 2s
	Hash      func([]byte) uint64 // default xxhash.Sum64; tests force collisions with it

	// CancelExpired gives an expired reservation's estimate back to its
	// key (--reserve-expiry cancel) instead of keeping it charged; see Reserve.
	CancelExpired bool
	// Charged appends to dst the i-th key the reservations of ledger, a
	// ledger's internal key, are charged to, or reports false past the
	// last (policy.AppendCharged): how Sweep finds the keys to give
	// expired estimates back to. Nil: Sweep drops such a ledger's expired
	// reservations without a refund; Reserve and ReserveAll still settle
	// them, since they know the keys.
	Charged func(dst, ledger []byte, i int) ([]byte, bool)
}

// Defaults.
const (
	DefaultShards = 256
	DefaultGrace  = 2 * time.Second
	MaxShards     = 1 << 16 // a Scan cursor has 16 bits for the shard
)

// Map is the store of per-key rate-limit state: a power-of-two array of shards,
// picked by key hash, each with its own lock. Within a shard a pointer-free
// index leads from the key's hash to a 24-byte slot, and the key's bytes, kept
// in an arena, are compared on lookup, so keys whose hashes collide stay apart.
// Index, slots, keys and counters live in pointer-free pages, so the garbage
// collector's cost does not grow with the number of keys. A key's state stays
// until Sweep finds that it no longer restricts anything. A shard holds at most
// 2^24-2 keys. A Map must be made with New; it is safe for concurrent use.
type Map struct {
	shards []*shard
	mask   uint64
	cfg    Config
	keys   atomic.Int64  // live keys, for MaxKeys and DBSIZE
	bytes  atomic.Int64  // bytes of pages and index entries, for MaxMemory
	next   atomic.Uint64 // the shard the next Sweep starts with

	customHash   bool  // cfg.Hash was given, not defaulted
	prefetchFrom int64 // keys from which Prefetch works: prefetchKeys, 0 in tests
}

// New returns an empty Map.
func New(cfg Config) (*Map, error) {
	if cfg.Shards == 0 {
		cfg.Shards = DefaultShards
	}
	if cfg.Shards < 1 || cfg.Shards > MaxShards || bits.OnesCount(uint(cfg.Shards)) != 1 {
		return nil, fmt.Errorf("shard: shards must be a power of two up to %d, got %d", MaxShards, cfg.Shards)
	}
	if cfg.MaxKeys < 0 || cfg.MaxMemory < 0 || cfg.Grace < 0 {
		return nil, errors.New("shard: limits must not be negative")
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	m := &Map{mask: uint64(cfg.Shards - 1), cfg: cfg, customHash: cfg.Hash != nil, prefetchFrom: prefetchKeys}
	if cfg.Hash == nil {
		m.cfg.Hash = xxhash.Sum64
	}
	for range cfg.Shards {
		m.shards = append(m.shards, newShard(m.hash))
	}
	return m, nil
}

// hash hashes key. A call through a func value makes its argument escape, which
// would cost every caller that builds keys on the stack an allocation, so the
// default hash is called directly and a configured one gets a copy.
//
// A key's hash finds it in its shard's index. Its shard is picked by the hash
// of its route: the key itself, unless the caller names another (DecideAll,
// Entry.Route), so that related keys share one lock.
func (m *Map) hash(key []byte) uint64 {
	if !m.customHash {
		if isLedger(key) {
			return ledgerHash(xxhash.Sum64(key[len(ledgerPrefix):]))
		}
		return xxhash.Sum64(key)
	}
	return m.cfg.Hash(bytes.Clone(key))
}

func (m *Map) shardFor(h uint64) *shard { return m.shards[h&m.mask] }

// locate returns key's hash and the shard that route (nil: key itself) picks.
func (m *Map) locate(key, route []byte) (uint64, *shard) {
	h := m.hash(key)
	if route == nil {
		return h, m.shardFor(h)
	}
	return h, m.shardFor(m.hash(route))
}

// Decide decides a request of cost units against key's state at now (unix
// nanoseconds) under parameters p, creating the key if it is admitted. With peek
// it returns the same decision but changes nothing and creates no key.
// A key that holds another algorithm's state gets ErrWrongType; a new key
// beyond the configured limits gets ErrFull.
func (m *Map) Decide(key []byte, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	return m.DecideHashed(key, m.hash(key), p, now, cost, peek)
}

// DecideHashed is Decide for a key whose hash h Prefetch gave: a batch's
// key is hashed once. A wrong h would make another key of key, so it must
// be the very hash Prefetch set for these bytes.
func (m *Map) DecideHashed(key []byte, h uint64, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	if checkHashes && h != m.hash(key) {
		panic("shard: DecideHashed given another key's hash")
	}
	s := m.shardFor(h)
	s.mu.Lock()
	d, err := m.decideLocked(s, key, h, p, max(now, 0), cost, peek)
	s.mu.Unlock()
	s.stats.count(d.Allowed, peek, false, err)
	return d, err
}

// check reports whether the Map can decide a request of cost under p.
func check(p window.Params, cost int64) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if cost < 1 {
		return window.ErrCost
	}
	return nil
}

// decideLocked decides a request under s's lock. Parameters a key already
// holds were checked when it took them, so only new ones are checked again:
// validating costs divisions on every request otherwise.
func (m *Map) decideLocked(s *shard, key []byte, h uint64, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	i, ok := s.findLocked(key, h)
	return m.decideAtLocked(s, key, h, i, ok, p, now, cost, peek)
}

// decideAtLocked is decideLocked of a key that findLocked found in slot i
// (ok), or did not, under the same hold of the lock: for a caller that
// looked it up already (a reservation reads the key's kind first).
func (m *Map) decideAtLocked(s *shard, key []byte, h uint64, i uint32, ok bool, p window.Params, now, cost int64, peek bool) (window.Decision, error) {
	var sl *slot
	var old window.Params
	if ok {
		sl = s.slots.at(i)
		old = s.params.get(sl.param()) // read once: the checks below all need it
	}
	if !ok || old.Expiry(sl.state, s.countersOfLocked(old.Kind, sl)) <= now {
		if err := check(p, cost); err != nil {
			return window.Decision{}, err
		}
		return m.createLocked(s, key, h, p, now, cost, peek, i, ok)
	}
	same := old == p // compared once: Params is too large for an inline compare
	if !same || cost < 1 {
		if err := admits(old, p, cost); err != nil {
			return window.Decision{}, err
		}
	}
	if peek { // decide under p, but leave the key's own parameters alone
		return s.decideSlotLocked(sl, p, now, cost, true), nil
	}
	changed := !same && s.setParamLocked(sl, p)
	d := s.decideSlotLocked(sl, p, now, cost, false)
	if d.Allowed || changed {
		s.markDirtyLocked(i)
	}
	m.accountLocked(s)
	return d, nil
}

// admits reports whether a request of cost under p may run on a key whose
// parameters are old.
func admits(old, p window.Params, cost int64) error {
	switch {
	case old == p && cost >= 1:
		return nil
	case old == p:
		return window.ErrCost
	}
	if err := check(p, cost); err != nil {
		return err
	}
	if old.Kind != p.Kind {
		return ErrWrongType
	}
	return nil
}

// createLocked decides a request for a key that does not exist, adding the key
// only if the request is admitted and not a peek. When expired is set the key
// is still in slot i, its state expired but not yet swept: it is absent all
// the same, and an admitted request starts its slot afresh, needing no new key.
func (m *Map) createLocked(s *shard, key []byte, h uint64, p window.Params, now, cost int64, peek bool, i uint32, expired bool) (window.Decision, error) {
	// A kind without counters decides once, on a fresh state that the slot
	// then takes: a peek decides as the charge does and only writes less.
	var fresh slot
	counters := hasCounters(p.Kind)
	d := s.decideSlotLocked(&fresh, p, now, cost, peek || counters)
	switch {
	case !d.Allowed:
		return d, nil
	case peek && !expired && !m.fitsLocked(s, 1):
		return window.Decision{}, ErrFull // the same call would get ErrFull
	case peek:
		return d, nil
	}
	if !expired {
		var ok bool
		if i, ok = m.insertLocked(s, key, h); !ok {
			return window.Decision{}, ErrFull
		}
	}
	sl := s.slots.at(i)
	s.resetSlotLocked(sl, p, now)
	if counters {
		d = s.decideSlotLocked(sl, p, now, cost, false)
	} else {
		sl.state = fresh.state
	}
	s.markDirtyLocked(i)
	m.accountLocked(s)
	return d, nil
}

// expiredLocked reports whether sl's state has stopped restricting anything
// by now. Such a key is absent for every command until Sweep frees it.
func (s *shard) expiredLocked(sl *slot, now int64) bool { return s.expiryLocked(sl) <= now }

// resetSlotLocked gives sl parameters p and the empty state, dropping whatever
// state and parameters it held, and counting the leases or reservations in
// it that ended by now. A slot that has p already keeps them bound:
// a key that expired and starts again with the same parameters before the
// sweep frees it (a token bucket that refilled, a window that ended) then
// costs the interned parameters no release and acquire.
func (s *shard) resetSlotLocked(sl *slot, p window.Params, now int64) {
	if sl.param() != 0 {
		old := s.params.get(sl.param())
		s.countEndedOfLocked(old, sl, now)
		if old == p {
			if hasCounters(p.Kind) {
				s.freeCountersLocked(sl)
			}
			sl.state = window.State{}
			return
		}
	}
	s.unbindLocked(sl)
	sl.state = window.State{}
	s.bindLocked(sl, p)
}

// setParamLocked re-parameterises sl, which applies to its state at once,
// and reports whether the parameters changed.
func (s *shard) setParamLocked(sl *slot, p window.Params) bool {
	if s.params.get(sl.param()) == p {
		return false
	}
	id := s.params.acquire(p)
	s.params.release(sl.param())
	sl.setParam(id)
	return true
}

// insertLocked adds key to s if the Map's limits allow it.
func (m *Map) insertLocked(s *shard, key []byte, h uint64) (uint32, bool) {
	if m.cfg.MaxMemory > 0 && m.bytes.Load() >= m.cfg.MaxMemory {
		return 0, false
	}
	if !m.reserveKey() {
		return 0, false
	}
	i, ok := s.insertLocked(key, h)
	if !ok {
		m.keys.Add(-1)
	}
	return i, ok
}

// fitsLocked reports whether n new keys would fit in s within the Map's
// limits, as insertLocked judges them, without adding any. A peek uses it to
// get ErrFull exactly when the same call would.
func (m *Map) fitsLocked(s *shard, n int) bool {
	if n == 0 {
		return true
	}
	if m.cfg.MaxMemory > 0 && m.bytes.Load() >= m.cfg.MaxMemory {
		return false
	}
	if m.cfg.MaxKeys > 0 && m.keys.Load()+int64(n) > m.cfg.MaxKeys {
		return false
	}
	return len(s.slots.free)+int(maxSlots-s.slots.next) >= n
}

// reserveKey counts one more key unless that would pass MaxKeys. It is exact
// across shards: a load-then-add would let every shard take the last key.
func (m *Map) reserveKey() bool {
	for {
		n := m.keys.Load()
		if m.cfg.MaxKeys > 0 && n >= m.cfg.MaxKeys {
			return false
		}
		if m.keys.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// decideSlotLocked runs p's algorithm on sl, whose state p's kind keeps.
func (s *shard) decideSlotLocked(sl *slot, p window.Params, now, cost int64, peek bool) window.Decision {
	if !hasCounters(p.Kind) {
		d, _ := p.Decide(&sl.state, nil, now, cost, peek)
		return d
	}
	if peek {
		d, _ := p.Decide(nil, s.peekCountersLocked(sl), now, cost, true)
		return d
	}
	d, b := p.Decide(nil, s.countersLocked(sl), now, cost, false)
	s.storeCountersLocked(sl, b)
	return d
}
