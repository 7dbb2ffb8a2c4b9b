package core

import (
	"strings"
	"testing"
)

// equalFoldBytes is EqualFold byte by byte, as it was before it compared
// words: the reference the word form must agree with.
func equalFoldBytes(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		if Lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// TestEqualFoldWords puts every byte value at every position of names of 1
// to 20 bytes, against their lower-case names and names one byte off, and
// checks that EqualFold agrees with the byte-by-byte reference.
func TestEqualFoldWords(t *testing.T) {
	for n := 1; n <= 20; n++ {
		name := strings.Repeat("rl.acquire|z@[`{_-", 2)[:n]
		for pos := range n {
			for c := range 256 {
				b := []byte(strings.ToUpper(name))
				b[pos] = byte(c)
				for _, s := range []string{name, name[:pos] + "x" + name[pos+1:]} {
					if got, want := EqualFold(b, s), equalFoldBytes(b, s); got != want {
						t.Fatalf("EqualFold(%q, %q) = %v, byte by byte %v", b, s, got, want)
					}
				}
			}
		}
	}
	if EqualFold([]byte("RL.ACQUIRE"), "rl.acquir") || !EqualFold([]byte("Rl.AcQuIrE"), "rl.acquire") {
		t.Fatal("EqualFold: lengths or mixed case")
	}
}

func BenchmarkEqualFold(b *testing.B) {
	name := []byte("RL.ACQUIRE")
	for b.Loop() {
		if !EqualFold(name, "rl.acquire") || EqualFold(name, "rl.release") {
			b.Fatal("EqualFold")
		}
	}
}
