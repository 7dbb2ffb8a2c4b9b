package decide

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
)

// TestIsWord compares isWord with core.EqualFold for every byte value at
// every position of each option and rule name the lease and reservation
// commands read.
func TestIsWord(t *testing.T) {
	for _, w := range []string{"id", "cost", "ttl", "policy", "actual", "slide", "fixed", "token"} {
		for i := range len(w) {
			for c := range 256 {
				b := []byte(w)
				b[i] = byte(c)
				if got, want := isWord(b, w), core.EqualFold(b, w); got != want {
					t.Fatalf("isWord(%q, %q) = %v, EqualFold says %v", b, w, got, want)
				}
			}
		}
		if isWord([]byte(w+"x"), w) || isWord([]byte(w[1:]), w) {
			t.Fatalf("isWord matched %q with another length", w)
		}
	}
}

// TestAdjustKind checks the rule names RL.RESERVE and RL.REFUND take, in
// any case, and that nothing else is taken for one.
func TestAdjustKind(t *testing.T) {
	for name, want := range map[string]window.Kind{
		"slide": window.KindSlide, "SLIDE": window.KindSlide, "sLiDe": window.KindSlide,
		"fixed": window.KindFixed, "FIXED": window.KindFixed,
		"token": window.KindToken, "Token": window.KindToken,
		"log": window.KindNone, "leaky": window.KindNone, "slid": window.KindNone, "slides": window.KindNone,
		"sl1de": window.KindNone, "xixed": window.KindNone, "": window.KindNone, "S\x0cIDE": window.KindNone,
	} {
		if got := adjustKind([]byte(name)); got != want {
			t.Errorf("adjustKind(%q) = %v, want %v", name, got, want)
		}
	}
}
