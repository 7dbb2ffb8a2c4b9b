package shard

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Test hashes that force collisions: every key the same, or one of three values.
func constHash([]byte) uint64     { return 42 }
func fewHashes(b []byte) uint64   { return uint64(len(b) % 3) }
func byFirstByte(b []byte) uint64 { return uint64(b[0] % 2) }

var collidingHashes = []struct {
	name string
	hash func([]byte) uint64
}{{"const", constHash}, {"few", fewHashes}, {"first byte", byFirstByte}}

// TestCollisionsKeepKeysApart gives distinct keys the same hash: each must
// keep its own state, and deleting one must leave the others alone.
func TestCollisionsKeepKeysApart(t *testing.T) {
	for _, h := range collidingHashes {
		t.Run(h.name, func(t *testing.T) {
			m, ref := newMap(t, Config{Shards: 2, Hash: h.hash}), newModel()
			keys := []string{"user:1", "user:2", "user:10", "a", "b", "ab", "tenant-a", "tenant-b"}
			for i, key := range keys { // key i takes i+1 of its limit of 8
				decideBoth(t, m, ref, key, slideP(8, time.Minute), t0, int64(i+1), false)
			}
			decideBoth(t, m, ref, "tok", tokenP(3, 1, time.Second), t0, 1, false)
			checkKeys(t, m, ref, t0)
			for i, key := range keys {
				d := decideBoth(t, m, ref, key, slideP(8, time.Minute), t0+sec, 1, false)
				assert.Equalf(t, i < 7, d.Allowed, "%q took %d of 8 before", key, i+1)
			}
			_, err := m.Decide([]byte("user:1"), tokenP(3, 1, time.Second), t0, 1, false)
			assert.ErrorIs(t, err, ErrWrongType, "a colliding token key must not lend user:1 its type")
			for _, key := range []string{"user:2", "a", "tenant-b"} {
				require.True(t, m.Delete([]byte(key)))
				delete(ref.keys, key)
				checkKeys(t, m, ref, t0+sec)
				checkInvariants(t, m)
			}
			decideBoth(t, m, ref, "user:2", slideP(8, time.Minute), t0+sec, 8, false) // back, afresh
			checkKeys(t, m, ref, t0+sec)
			checkInvariants(t, m)
		})
	}
}

// TestCollisionsSweep sweeps keys that share a hash and expire at different
// times: only the expired ones go, and the rest keep their state.
func TestCollisionsSweep(t *testing.T) {
	for _, h := range collidingHashes {
		t.Run(h.name, func(t *testing.T) {
			m, ref := newMap(t, Config{Shards: 1, Hash: h.hash}), newModel()
			for i := range 30 {
				win := time.Duration(1+i%5) * 10 * time.Second // expire at 10, 20 … 50 s
				decideBoth(t, m, ref, fmt.Sprintf("k%d", i), slideP(3, win), t0, 2, false)
			}
			for _, at := range []int64{5, 25, 45, 60} {
				now := t0 + at*sec + int64(DefaultGrace)
				assert.Equal(t, ref.sweep(now, DefaultGrace), m.Sweep(now, 1e6), "Sweep at %d s", at)
				checkKeys(t, m, ref, now)
				checkInvariants(t, m)
			}
			assert.Zero(t, m.Len())
		})
	}
}

// TestCollisionsRebuild lets most of many colliding keys expire, so the sweep
// rebuilds the shard, and checks that the survivors come through intact.
func TestCollisionsRebuild(t *testing.T) {
	for _, h := range collidingHashes {
		t.Run(h.name, func(t *testing.T) {
			m, ref := newMap(t, Config{Shards: 1, Hash: h.hash}), newModel()
			for i := range 1500 {
				p := slideP(5, time.Second)
				if i%10 == 0 {
					p = slideP(5, time.Hour) // survivors, spread over the slots
				}
				decideBoth(t, m, ref, fmt.Sprintf("key-%d", i), p, t0+int64(i%3)*sec, 1+int64(i%4), false)
			}
			now := t0 + time.Minute.Nanoseconds()
			assert.Equal(t, 1350, m.Sweep(now, 1e6))
			ref.sweep(now, DefaultGrace)
			assert.EqualValues(t, 1, m.Stats().Rebuilds)
			checkKeys(t, m, ref, now)
			checkInvariants(t, m)
			for i := 0; i < 1500; i += 10 {
				decideBoth(t, m, ref, fmt.Sprintf("key-%d", i), slideP(5, time.Hour), now, 2, false)
			}
			checkKeys(t, m, ref, now)
		})
	}
}
