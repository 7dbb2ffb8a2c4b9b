package testport

import "testing"

// TestStableGivesNoPortTwice picks as many ports as a large process test
// does, and more: none may repeat, or two nodes of one test would bind
// the same port.
func TestStableGivesNoPortTwice(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		p := Stable(t)
		if seen[p] {
			t.Fatalf("port %s given twice", p)
		}
		seen[p] = true
	}
}
