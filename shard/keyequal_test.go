package shard

import (
	"bytes"
	"testing"
	"time"
)

// equalKey answers as bytes.Equal for keys of 8 to 32 bytes that differ in
// any one byte, or in none.
func TestEqualKey(t *testing.T) {
	for n := 8; n <= 32; n++ {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte('a' + i)
		}
		if !equalKey(a, bytes.Clone(a)) {
			t.Fatalf("%d bytes: equal keys differ", n)
		}
		for i := range n {
			b := bytes.Clone(a)
			b[i] ^= 0x40
			if equalKey(a, b) {
				t.Fatalf("%d bytes: keys differing at %d are equal", n, i)
			}
		}
	}
}

// A lookup finds each key of every length around those keyIsLocked
// compares as words, and none of the keys one byte off them.
func TestFindKeysOfEveryLength(t *testing.T) {
	m := newMap(t, Config{})
	var keys [][]byte
	for n := 1; n <= 300; n++ {
		k := bytes.Repeat([]byte{'k'}, n)
		k[n/2] = byte(n)
		keys = append(keys, k)
		_, err := m.Decide(k, slideP(3, time.Minute), t0, 1, false)
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range keys {
		if d, _ := m.Decide(k, slideP(3, time.Minute), t0, 1, true); d.Remaining != 1 {
			t.Fatalf("key of %d bytes: remaining %d, want 1", len(k), d.Remaining)
		}
		off := bytes.Clone(k)
		off[len(off)-1] ^= 1
		if d, _ := m.Decide(off, slideP(3, time.Minute), t0, 1, true); d.Remaining != 2 {
			t.Fatalf("key of %d bytes one byte off: remaining %d, want 2", len(k), d.Remaining)
		}
	}
}
