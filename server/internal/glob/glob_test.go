package glob

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestGlobMatchLikeRedis checks patterns against what redis-server 7.0's KEYS
// returned for the same keys.
func TestGlobMatchLikeRedis(t *testing.T) {
	keys := []string{
		"a", "ab", "abc", "ac", "a*c", "a?c", "a[c", `a\c`, `a\`, "a[", "a]", "aXc", "a-c",
		"x", "b", "^", "hello", "hallo", "hxllo", "heeeello", "hllo",
	}
	cases := map[string][]string{
		"a*":       {"a", "ab", "abc", "ac", "a*c", "a?c", "a[c", `a\c`, `a\`, "a[", "a]", "aXc", "a-c"},
		"*c":       {"abc", "ac", "a*c", "a?c", "a[c", `a\c`, "aXc", "a-c"},
		"a?c":      {"abc", "a*c", "a?c", "a[c", `a\c`, "aXc", "a-c"},
		`a\*c`:     {"a*c"},
		`a\?c`:     {"a?c"},
		"a[bX]c":   {"abc", "aXc"},
		"a[^bX]c":  {"a*c", "a?c", "a[c", `a\c`, "a-c"},
		"a[a-z]c":  {"abc"},
		"a[z-a]c":  {"abc"},
		`a\\c`:     {`a\c`},
		"a]":       {"a]"},
		"[]":       nil,
		"[^]":      {"a", "x", "b", "^"},
		`a[\]]`:    {"a]"},
		"h[ae]llo": {"hello", "hallo"},
		"h[^e]llo": {"hallo", "hxllo"},
		"h*llo":    {"hello", "hallo", "hxllo", "heeeello", "hllo"},
		"h?llo":    {"hello", "hallo", "hxllo"},
		"a[-]c":    {"a-c"},
		`[\^]`:     {"^"},
		"a[c":      {"ac"},
		"a[bc":     {"ab", "ac"},
		"a[^c":     {"ab", `a\`, "a[", "a]"},
		`a\`:       {`a\`},
		"a[":       nil,
		`a[\`:      {`a\`},
		"[a":       {"a"},
	}
	for pat, want := range cases {
		var got []string
		for _, k := range keys {
			if Match([]byte(pat), []byte(k)) {
				got = append(got, k)
			}
		}
		assert.ElementsMatchf(t, want, got, "KEYS %q", pat)
	}
}

// TestGlobMatchHostile shows that stars cannot make matching exponential, as
// they can in a naive backtracking matcher.
func TestGlobMatchHostile(t *testing.T) {
	s := []byte(strings.Repeat("a", 10000))
	pat := []byte(strings.Repeat("*a", 100) + "b")
	assert.False(t, Match(pat, s))
	assert.True(t, Match([]byte(strings.Repeat("*a", 100)), s))
}

// FuzzGlob compares Match with a naive recursive matcher over the same tokens.
func FuzzGlob(f *testing.F) {
	for _, seed := range [][2]string{
		{"a*b?c", "axxbyc"}, {"*[a-c]*", "zzbzz"}, {`\*[^]]`, "*x"}, {"[", ""}, {"**?", "q"},
	} {
		f.Add([]byte(seed[0]), []byte(seed[1]))
	}
	f.Fuzz(func(t *testing.T, pat, s []byte) {
		if len(pat) > 24 || len(s) > 24 || strings.Count(string(pat), "*") > 6 {
			return // keep the reference's exponential search small
		}
		if got, want := Match(pat, s), naive(pat, s); got != want {
			t.Fatalf("Match(%q, %q) = %v, want %v", pat, s, got, want)
		}
	})
}

// naive tries every split at every star.
func naive(pat, s []byte) bool {
	switch {
	case len(pat) == 0:
		return len(s) == 0
	case pat[0] == '*':
		for i := 0; i <= len(s); i++ {
			if naive(pat[1:], s[i:]) {
				return true
			}
		}
		return false
	case len(s) == 0:
		return false
	}
	next, ok := globOne(pat, 0, s[0])
	return ok && naive(pat[next:], s[1:])
}
