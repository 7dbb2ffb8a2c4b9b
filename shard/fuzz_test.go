package shard

import (
	"slices"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fuzzed Map's keys collide: the hash is the key's length, so "a", "b"
// and "c" share one hash, "user:1" and "user:2" another, and two shards split
// them by length.
var (
	fuzzKeys   = []string{"a", "b", "c", "ab", "user:1", "user:2"}
	fuzzSlides = []window.Params{
		slideP(1, time.Second), slideP(2, 2*time.Second), slideP(3, 5*time.Second),
		slideP(5, 10*time.Second), slideP(4, time.Minute), slideP(2, 3601*time.Second),
	}
	fuzzTokens = []window.Params{
		tokenP(1, 1, time.Second), tokenP(3, 1, 2*time.Second), tokenP(5, 2, time.Second), tokenP(2, 1, time.Minute),
	}
	// fuzzOthers are Fixed, Log and Leaky parameters, with Log limits large
	// enough to push a key's entries out of its slot into a block.
	fuzzOthers = []window.Params{
		fixedP(2, time.Second), fixedP(5, 1500*time.Millisecond), fixedP(3, time.Minute),
		logP(3, time.Second), logP(12, 2*time.Second), logP(4, time.Minute),
		leakyP(2, 1, time.Second), leakyP(5, 2, time.Second), leakyP(3, 1, time.Minute),
	}
)

func lenHash(b []byte) uint64 { return uint64(len(b)) }

const fuzzGrace = time.Second

// FuzzMap reads the fuzz bytes as a program of three-byte instructions
// (op, arg, clock step) over a few colliding keys, and checks every reply, and
// the whole Map after each instruction, against the reference model.
func FuzzMap(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1, 0, 3, 2, 20, 4, 1, 0, 5, 0, 199, 6, 2, 0})
	f.Add([]byte{1, 0x20, 10, 9, 0x31, 0, 3, 4, 220, 7, 0, 0, 11, 5, 250, 5, 7, 30})
	f.Add([]byte{0, 0, 0, 3, 0, 30, 2, 0x28, 30, 2, 0x18, 40}) // a key taken over after it expired, not yet swept
	f.Fuzz(func(t *testing.T, prog []byte) {
		m, ref := newMap(t, Config{Shards: 2, Hash: lenHash, Grace: fuzzGrace}), newModel()
		m.prefetchFrom = 0 // Prefetch before every step must change nothing
		var keys [][]byte
		for _, k := range fuzzKeys {
			keys = append(keys, []byte(k))
		}
		now := t0
		for ; len(prog) >= 3; prog = prog[3:] {
			now = fuzzClock(now, prog[2])
			m.Prefetch(keys, nil)
			fuzzStep(t, m, ref, prog[0], prog[1], now)
			checkInvariants(t, m)
		}
		checkKeys(t, m, ref, now)
	})
}

// fuzzClock steps the clock by b: forward up to 10 s, back up to 5 s, or
// forward whole hours.
func fuzzClock(now int64, b byte) int64 {
	switch {
	case b < 200:
		return now + int64(b)*int64(50*time.Millisecond)
	case b < 250:
		return now - int64(b-200)*int64(100*time.Millisecond)
	}
	return now + int64(b-249)*int64(time.Hour)
}

// fuzzStep runs one instruction. The op's low three bits pick the operation;
// its high bits and arg pick a key, parameters, a cost and whether to peek.
func fuzzStep(t *testing.T, m *Map, ref *model, op, arg byte, now int64) {
	key := fuzzKeys[int(arg)%len(fuzzKeys)]
	cost, peek := 1+int64(op>>3)%4, op&0x80 != 0
	switch op % 8 {
	case 0, 1:
		decideBoth(t, m, ref, key, fuzzSlides[int(arg>>3)%len(fuzzSlides)], now, cost, peek)
	case 2:
		decideBoth(t, m, ref, key, fuzzOthers[int(arg>>3)%len(fuzzOthers)], now, cost, peek)
	case 3:
		decideBoth(t, m, ref, key, fuzzTokens[int(arg>>3)%len(fuzzTokens)], now, cost, peek)
	case 4:
		_, had := ref.keys[key]
		require.Equal(t, had, m.Delete([]byte(key)), "Delete(%q)", key)
		delete(ref.keys, key)
	case 5:
		fuzzSweep(t, m, ref, now, int(arg)%8)
	case 6:
		fuzzScan(t, m, ref, 1+int(arg)%4)
	default:
		if arg == 0 {
			m.Flush()
			clear(ref.keys)
		}
		checkKeys(t, m, ref, now)
	}
}

// fuzzSweep sweeps with budget, where 0 means enough for every slot.
func fuzzSweep(t *testing.T, m *Map, ref *model, now int64, budget int) {
	if budget == 0 {
		require.Equal(t, ref.sweep(now, fuzzGrace), m.Sweep(now, 1<<20), "Sweep(t0%+v) freed", time.Duration(now-t0))
		return
	}
	m.Sweep(now, budget)
	ref.syncSwept(t, m, now, fuzzGrace)
}

// fuzzScan walks the whole Map with Scan: every key exactly once.
func fuzzScan(t *testing.T, m *Map, ref *model, count int) {
	var got []string
	var keys [][]byte
	for cursor, steps := uint64(0), 0; ; steps++ {
		require.Less(t, steps, 100, "Scan never returned cursor 0")
		keys, cursor = m.Scan(keys[:0], cursor, count)
		for _, k := range keys {
			got = append(got, string(k))
		}
		if cursor == 0 {
			break
		}
	}
	var want []string
	for k := range ref.keys {
		want = append(want, k)
	}
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got, "Scan(count %d)", count)
}
