package route

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestReleasedForms: RL.PEER RELEASED takes, after its slots, KEEP,
// HANDED and its slots, RESTORED and its processes, then PAST and the
// nodes it names, each optional; any other form is refused
// (NOPERM), which is how an asker recognises a node that predates a word.
func TestReleasedForms(t *testing.T) {
	for _, tc := range []struct {
		rest string
		want bool
	}{
		{"", true},
		{"KEEP", true},
		{"keep", true},
		{"PAST", true},
		{"PAST a b", true},
		{"KEEP PAST a", true},
		{"PAST KEEP", true}, // a node named KEEP
		{"KEEP KEEP", false},
		{"a", false},
		{"KEEP a", false},
		{"HANDED 1-5 PAST", true},
		{"KEEP HANDED 1 RESTORED 7,9 PAST a", true},
		{"RESTORED 7 PAST", true},
		{"RESTORED 7 HANDED 1 PAST", false}, // out of order
		{"HANDED PAST", false},              // no slots
		{"KEEP RESTORED", false},
	} {
		var rest [][]byte
		for _, f := range strings.Fields(tc.rest) {
			rest = append(rest, []byte(f))
		}
		assert.Equal(t, tc.want, releasedForm(rest), "releasedForm(%q)", tc.rest)
	}
}
