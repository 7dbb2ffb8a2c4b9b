package server

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseInt(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1": 1, "-1": -1, "42": 42, "4294967295": math.MaxUint32,
		"9223372036854775807": math.MaxInt64, "-9223372036854775808": math.MinInt64,
	}
	for in, want := range good {
		got, ok := parseInt([]byte(in))
		assert.Truef(t, ok, "parseInt(%q) refused", in)
		assert.Equalf(t, want, got, "parseInt(%q)", in)
	}
	bad := []string{
		"", "-", "+1", " 1", "1 ", "01", "-0", "00", "1.0", "1e3", "0x10", "abc", "١",
		"9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999",
	}
	for _, in := range bad {
		_, ok := parseInt([]byte(in))
		assert.Falsef(t, ok, "parseInt(%q) accepted", in)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"60": time.Minute, "0": 0, "500ms": 500 * time.Millisecond, "90s": 90 * time.Second,
		"15m": 15 * time.Minute, "1h": time.Hour, "7d": 7 * 24 * time.Hour, "0ms": 0,
		"9223372036854ms": 9223372036854 * time.Millisecond,
		"9223372036s":     9223372036 * time.Second,
		"106751d":         106751 * 24 * time.Hour,
		"153722867m":      153722867 * time.Minute,
		"2562047h":        2562047 * time.Hour,
	}
	for in, want := range good {
		got, ok := policy.ParseDuration([]byte(in))
		assert.Truef(t, ok, "policy.ParseDuration(%q) refused", in)
		assert.Equalf(t, want, got, "policy.ParseDuration(%q)", in)
	}
	bad := []string{
		"", "s", "ms", "-1", "-1s", "+1s", "1.5s", "1 s", " 1s", "1S", "1M", "1ms ", "1us", "1ns",
		"1w", "1y", "1sec", "1m1s", "01s", "1d1", "9223372036855ms", "9223372037s", "106752d",
		"153722868m", "2562048h", "99999999999999999999",
	}
	for _, in := range bad {
		_, ok := policy.ParseDuration([]byte(in))
		assert.Falsef(t, ok, "policy.ParseDuration(%q) accepted", in)
	}
}

func TestParseOptions(t *testing.T) {
	cases := []struct {
		opts      []string
		wantCost  int64
		wantPeek  bool
		wantError error
	}{
		{nil, 1, false, nil},
		{[]string{"PEEK"}, 1, true, nil},
		{[]string{"peek", "Peek"}, 1, true, nil},
		{[]string{"COST", "5"}, 5, false, nil},
		{[]string{"cost", "5", "PEEK"}, 5, true, nil},
		{[]string{"PEEK", "CoSt", "9223372036854775807"}, math.MaxInt64, true, nil},
		{[]string{"COST", "5", "COST", "2"}, 2, false, nil},
		{[]string{"COST", "0"}, 0, false, decide.ErrCost},
		{[]string{"COST", "-1"}, 0, false, decide.ErrCost},
		{[]string{"COST", "5", "COST", "0"}, 0, false, decide.ErrCost},
		{[]string{"COST", "1.5"}, 0, false, errArgNotInt},
		{[]string{"COST", "PEEK"}, 0, false, errArgNotInt},
		{[]string{"COST"}, 0, false, errArgSyntax},
		{[]string{"PEEK", "COST"}, 0, false, errArgSyntax},
		{[]string{"PEEKX"}, 0, false, errArgSyntax},
		{[]string{"5"}, 0, false, errArgSyntax},
		{[]string{""}, 0, false, errArgSyntax},
	}
	for _, tc := range cases {
		var a decide.NativeArgs
		err := decide.ParseOptions(byteArgs(tc.opts...), &a)
		if tc.wantError != nil {
			assert.Equalf(t, tc.wantError, err, "options %q", tc.opts)
			continue
		}
		if assert.NoErrorf(t, err, "options %q", tc.opts) {
			assert.Equalf(t, tc.wantCost, a.Cost, "options %q: cost", tc.opts)
			assert.Equalf(t, tc.wantPeek, a.Peek, "options %q: peek", tc.opts)
		}
	}
}

func TestParseSlideToken(t *testing.T) {
	a, err := parseSlide(byteArgs("rl.slide", "k", "100", "1h", "PEEK", "COST", "3"))
	require.NoError(t, err)
	assert.Equal(t, decide.NativeArgs{Key: []byte("k"), Cost: 3, Peek: true,
		Params: window.Params{Kind: window.KindSlide, Limit: 100, Period: time.Hour}}, a)

	a, err = parseToken(byteArgs("rl.token", "k", "10", "3", "500ms"))
	require.NoError(t, err)
	assert.Equal(t, decide.NativeArgs{Key: []byte("k"), Cost: 1,
		Params: window.Params{Kind: window.KindToken, Limit: 10, Rate: 3, Period: 500 * time.Millisecond}}, a)

	// Whatever the parser accepts, the store must accept too: parsing is the
	// only validation the reply can name.
	for _, args := range [][]string{
		{"rl.slide", "k", "4294967295", "3650d"}, {"rl.slide", "k", "1", "1"},
		{"rl.slide", "k", "7", "3601"}, {"rl.token", "k", "1", "1", "1ms"},
		{"rl.token", "k", "1", "1000000", "1ms"}, {"rl.token", "k", "10", "1", "3650d"},
	} {
		a, err := parseAny(byteArgs(args...))
		require.NoErrorf(t, err, "%q", args)
		assert.NoErrorf(t, a.Params.Validate(), "%q", args)
	}
}

// parseSlide parses RL.SLIDE key limit window [COST n] [PEEK].
func parseSlide(args [][]byte) (decide.NativeArgs, error) {
	return decide.ParseNative(window.KindSlide, args, nil)
}

// parseToken parses RL.TOKEN key capacity rate period [COST n] [PEEK].
func parseToken(args [][]byte) (decide.NativeArgs, error) {
	return decide.ParseNative(window.KindToken, args, nil)
}

// parseAny parses a decision command of either algorithm by its name.
func parseAny(args [][]byte) (decide.NativeArgs, error) {
	if equalFoldASCII(args[0], "rl.token") {
		return parseToken(args)
	}
	return parseSlide(args)
}

func TestEqualFold(t *testing.T) {
	assert.True(t, equalFoldASCII([]byte("PeEk"), "peek"))
	assert.False(t, equalFoldASCII([]byte("pee"), "peek"))
	for l := byte('a'); l <= 'z'; l++ { // every byte against every letter
		for b := range 256 {
			want := byte(b) == l || byte(b) == l-'a'+'A'
			assert.Equalf(t, want, equalFoldASCII([]byte{byte(b)}, string(l)), "equalFoldASCII(%q, %q)", b, l)
		}
	}
	assert.False(t, equalFoldASCII([]byte("peeK!"), "peek"))
}

// TestDecisionPathAllocs guards the hot path: parsing a warm key's command,
// deciding it and encoding the reply allocate nothing.
func TestDecisionPathAllocs(t *testing.T) {
	m, err := shard.New(shard.Config{})
	require.NoError(t, err)
	now := time.Now().UnixNano()
	buf := make([]byte, 0, 64)
	for _, args := range [][][]byte{
		byteArgs("RL.SLIDE", "user:42", "1000000", "60", "COST", "1"),
		byteArgs("RL.TOKEN", "tok:42", "1000000", "10", "1s", "PEEK"),
	} {
		step := func() {
			a, err := parseAny(args)
			if err != nil {
				panic(err)
			}
			d, err := m.Decide(a.Key, a.Params, now, a.Cost, a.Peek)
			if err != nil {
				panic(err)
			}
			buf = decide.AppendDecision(buf[:0], d)
		}
		step()
		assert.Zerof(t, testing.AllocsPerRun(1000, step), "allocs for %q", args)
	}
	bad := byteArgs("RL.SLIDE", "k", "100", "60", "COST", "0")
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = parseSlide(bad) }), "an error path allocated")
}

// BenchmarkDecisionPath measures parse + shard.Decide + reply encoding, as a
// server connection runs it, over several key counts.
func BenchmarkDecisionPath(b *testing.B) {
	for _, keys := range []int{1, 1000, 100000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			m, err := shard.New(shard.Config{})
			require.NoError(b, err)
			cmds := benchCommands(keys)
			for _, args := range cmds { // measure warm keys, not their first insertion
				a, _ := parseSlide(args)
				_, _ = m.Decide(a.Key, a.Params, time.Now().UnixNano(), a.Cost, a.Peek)
			}
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				buf := make([]byte, 0, 64)
				for i := 0; pb.Next(); i++ {
					a, err := parseSlide(cmds[i%len(cmds)])
					if err != nil {
						b.Fatal(err)
					}
					d, err := m.Decide(a.Key, a.Params, time.Now().UnixNano(), a.Cost, a.Peek)
					if err != nil {
						b.Fatal(err)
					}
					buf = decide.AppendDecision(buf[:0], d)
				}
			})
		})
	}
}

// benchCommands builds RL.SLIDE commands over n keys, as redis-benchmark's
// "RL.SLIDE key:__rand_int__ 100 60" sends them.
func benchCommands(n int) [][][]byte {
	cmds := make([][][]byte, n)
	for i := range cmds {
		cmds[i] = byteArgs("RL.SLIDE", "key:"+strconv.Itoa(i), "100", "60")
	}
	return cmds
}

func byteArgs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i := range s {
		out[i] = []byte(s[i])
	}
	return out
}
