package shard

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/require"
)

// ledgerModel is the reference for a Map's reservations: the keys in a
// model, and each key's ledger as the words window.Reservations keeps,
// settled, added to and taken from by window's functions directly, in the
// order Map.Reserve's contract gives.
type ledgerModel struct {
	keys    *model
	ledgers map[string][]uint64
	cancel  bool // Config.CancelExpired
}

// live returns key's model and whether it is live at now.
func (lm *ledgerModel) live(key string, now int64) (*modelKey, bool) {
	k, ok := lm.keys.keys[key]
	return k, ok && k.info(now).Expiry > now
}

// adjust is Map.adjustLocked: a live key's units change by n.
func (lm *ledgerModel) adjust(key string, now, n int64) {
	k, live := lm.live(key, now)
	if !live {
		return
	}
	var b []uint64
	if k.p.Kind == window.KindSlide {
		b = slices.Grow(k.counters, 1)
	}
	b, _ = k.p.Adjust(&k.state, b, now, n)
	if k.p.Kind == window.KindSlide {
		k.counters = b
	}
}

// settle gives back the estimates of key's expired reservations, if its
// ledger gives them back, and drops a ledger left empty.
func (lm *ledgerModel) settle(key string, now int64) {
	b, ok := lm.ledgers[key]
	p := window.LedgerParams(lm.cancel)
	if !ok || !(window.Reservations{}).Due(p, b, now) {
		return
	}
	sum, b := p.Ledger().Settle(b, now)
	lm.adjust(key, now, -sum)
	if len(b) == 0 {
		delete(lm.ledgers, key)
		return
	}
	lm.ledgers[key] = b
}

// ledger returns key's ledger and whether it is live at now.
func (lm *ledgerModel) ledger(key string, now int64) ([]uint64, bool) {
	b, ok := lm.ledgers[key]
	return b, ok && window.LedgerParams(lm.cancel).Expiry(window.State{}, b) > now
}

// reserve is what Map.Reserve of r must answer.
func (lm *ledgerModel) reserve(key string, r ReserveRequest, now int64) ReserveResult {
	lm.settle(key, now)
	rs := window.LedgerParams(lm.cancel).Ledger()
	b, live := lm.ledger(key, now)
	switch r.Op {
	case ReserveNew:
		if _, dup := rs.Find(b, now, r.ID); live && dup {
			d, _ := lm.keys.decide(key, r.Params, now, 1, true)
			d.Allowed, d.Wait = true, 0
			return ReserveResult{Decision: d, Done: true}
		}
		d, _ := lm.keys.decide(key, r.Params, now, r.Units, false)
		if !d.Allowed {
			return ReserveResult{Decision: d}
		}
		if !live {
			b = nil
		}
		lm.ledgers[key] = rs.Add(slices.Grow(b, 2), now, r.ID, r.TTL, r.Units)
		return ReserveResult{Decision: d}
	}
	if !live {
		return ReserveResult{}
	}
	est, ok, left := rs.Take(b, now, r.ID)
	if len(left) == 0 {
		delete(lm.ledgers, key)
	} else {
		lm.ledgers[key] = left
	}
	if !ok {
		return ReserveResult{}
	}
	delta := -est
	if r.Op == ReserveCommit {
		delta = r.Units - est
	}
	if delta != 0 {
		lm.adjust(key, now, delta)
	}
	return ReserveResult{Done: true}
}

// ledgerWords returns the words of key's ledger in m, and whether it is
// live at now.
func ledgerWords(m *Map, key, ledger []byte, now int64) ([]uint64, bool) {
	s := m.shardFor(m.hash(key))
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.findLocked(ledger, m.hash(ledger))
	if !ok || s.expiredLocked(s.slots.at(i), now) {
		return nil, false
	}
	return slices.Clone(s.peekCountersLocked(s.slots.at(i))), true
}

// TestReserveModel runs random traces of RL.RESERVE, RL.COMMIT and
// RL.CANCEL on keys of each adjustable kind, in both expiry modes, with
// ids that repeat and a clock that lets keys, reservations and ledgers
// expire, and checks every reply, each key's state and each ledger's
// words against ledgerModel after every step. It covers the store's
// shortcuts on the way: a ledger's first reservation kept in its slot's
// own words, a key that is not live created with one decision.
func TestReserveModel(t *testing.T) {
	params := map[string]window.Params{
		"tok:fast": tokenP(10, 5, time.Second), // full again, so expired, within a few steps
		"tok:slow": tokenP(10, 1, 10*time.Second),
		"fixed":    fixedP(10, 2*time.Second),
		"slide":    slideP(10, 2*time.Second),
	}
	var keys []string
	for k := range params {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, cancel := range []bool{false, true} {
		for seed := range uint64(12) {
			rng := rand.New(rand.NewPCG(seed, 32))
			m := newMap(t, Config{CancelExpired: cancel})
			lm := &ledgerModel{keys: newModel(), ledgers: map[string][]uint64{}, cancel: cancel}
			now := t0
			for step := range 2000 {
				now += rng.Int64N(4) * rng.Int64N(400) * int64(time.Millisecond)
				key := keys[rng.IntN(len(keys))]
				r := ReserveRequest{
					Op:     ReserveOp(rng.IntN(3)), // new, commit, cancel
					Params: params[key],
					ID:     window.LeaseID([]byte{'r', byte('0' + rng.IntN(5))}),
					TTL:    time.Duration(1+rng.IntN(3000)) * time.Millisecond,
					Units:  int64(1 + rng.IntN(6)),
				}
				if r.Op == ReserveCommit {
					r.Units = int64(rng.IntN(10))
				} else if r.Op == ReserveCancel {
					r.Units = 0
				}
				ledger := policy.AppendLedgerKey(nil, []byte(key))
				got, err := m.Reserve([]byte(key), ledger, &r, now)
				require.NoError(t, err)
				want := lm.reserve(key, r, now)
				require.Equalf(t, want, got, "cancel=%v seed %d step %d: %+v on %s", cancel, seed, step, r, key)
				for _, k := range keys {
					inf, ok := m.Get([]byte(k), now)
					mk, live := lm.live(k, now)
					if live {
						require.Truef(t, ok, "seed %d step %d: %s is live in the model only", seed, step, k)
						require.Equalf(t, mk.info(now), inf, "cancel=%v seed %d step %d: %s", cancel, seed, step, k)
					} else if ok {
						require.LessOrEqualf(t, inf.Expiry, now, "seed %d step %d: %s is live in the Map only", seed, step, k)
					}
					words, live := ledgerWords(m, []byte(k), policy.AppendLedgerKey(nil, []byte(k)), now)
					wantWords, wantLive := lm.ledger(k, now)
					require.Equalf(t, wantLive, live, "cancel=%v seed %d step %d: %s's ledger live", cancel, seed, step, k)
					if live {
						require.Equalf(t, wantWords, words, "cancel=%v seed %d step %d: %s's ledger", cancel, seed, step, k)
					}
				}
			}
		}
	}
}
