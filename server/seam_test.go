package server

import (
	"bytes"
	"testing"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seamCommands are one command of every decision kind, with the parser its
// table entry runs.
func seamCommands() []struct {
	parse parseFunc
	args  [][]byte
} {
	return []struct {
		parse parseFunc
		args  [][]byte
	}{
		{nativeParser(window.KindSlide), byteArgs("RL.SLIDE", "s", "1000000", "60", "COST", "2")},
		{nativeParser(window.KindToken), byteArgs("RL.TOKEN", "t", "1000000", "10", "1s", "PEEK")},
		{nativeParser(window.KindFixed), byteArgs("RL.FIXED", "f", "1000000", "500ms")},
		{nativeParser(window.KindFixed), byteArgs("RL.FIXED", "ff", "1000000", "500ms", "ANCHOR", "FIRST")},
		{nativeParser(window.KindLog), byteArgs("RL.LOG", "l", "4000", "1m", "COST", "1")},
		{nativeParser(window.KindLeaky), byteArgs("RL.LEAKY", "q", "1000000", "1000000", "1s")},
		{parseThrottleReq, byteArgs("CL.THROTTLE", "c", "1000000", "1000000", "60", "1")},
		{parseThrottleReq, byteArgs("CL.THROTTLE", "c", "15", "30", "60", "0")},
		{parseCheckReq, byteArgs("RL.CHECK", "pol", "k", "COST", "3")},
		{parseCheckReq, byteArgs("RL.CHECK", "pol", "k", "PEEK")},
	}
}

// seamServer returns a server, not listening, with the policy seamCommands use.
func seamServer(t *testing.T) *Server {
	s := newTestServer(t, Config{})
	p, err := policy.Parse("pol", []string{"SLIDE", "1000000", "60", "TOKEN", "1000000", "10", "1s", "PENALTY", "1s"})
	require.NoError(t, err)
	s.pol.byName[p.Name] = p
	return s
}

// TestRequestRoundTrips checks that a request is self-contained: written back
// as a command (what a cluster forwards), it parses into the same request.
func TestRequestRoundTrips(t *testing.T) {
	s, c := seamServer(t), &client{}
	for _, tc := range seamCommands() {
		key, r, err := tc.parse(s, c, tc.args)
		require.NoError(t, err, "%q", tc.args)
		again := r.appendCommand(nil, key)
		key2, r2, err := tc.parse(s, c, again)
		require.NoError(t, err, "%q", again)
		assert.Equal(t, key, key2, "%q", again)
		assert.Equal(t, r, r2, "%q became %q", tc.args, again)
	}
}

// TestDecisionSeamAllocs guards the hot path of every decision command:
// parsing a warm key's command, deciding it through the seam and encoding
// the reply allocate nothing.
func TestDecisionSeamAllocs(t *testing.T) {
	s, c := seamServer(t), &client{}
	buf := make([]byte, 0, 64)
	for _, tc := range seamCommands() {
		step := func() {
			key, r, err := tc.parse(s, c, tc.args)
			if err != nil {
				panic(err)
			}
			r.now = t0
			o, err := s.decide(key, &r)
			if err != nil {
				panic(err)
			}
			buf = decide.AppendDecision(buf[:0], o.d)
		}
		step()
		assert.Zerof(t, quietAllocsPerRun(1000, step), "allocs for %q", tc.args)
	}
}

// quietAllocsPerRun is testing.AllocsPerRun, the least of three tries.
// AllocsPerRun counts every malloc of the process while f runs, so on a
// loaded host, where 1000 runs can take long enough, goroutines a previous
// test left winding down (a cluster node's gossip, a client's pool) can add
// a thousand and make it report 1. An f that allocates does so in every
// try, so the least of three still catches it.
func quietAllocsPerRun(runs int, f func()) float64 {
	least := testing.AllocsPerRun(runs, f)
	for i := 0; i < 2 && least > 0; i++ {
		least = min(least, testing.AllocsPerRun(runs, f))
	}
	return least
}

// TestCheckLongKey checks RL.CHECK on a key whose rule keys outgrow the
// stack buffer they are built in.
func TestCheckLongKey(t *testing.T) {
	s := seamServer(t)
	long := bytes.Repeat([]byte("k"), 2000)
	for want := int64(999999); want > 999996; want-- {
		key, r, err := parseCheckReq(s, nil, [][]byte{[]byte("RL.CHECK"), []byte("pol"), long})
		require.NoError(t, err)
		r.now = t0
		o, err := s.decide(key, &r)
		require.NoError(t, err)
		assert.Equal(t, want, o.d.Remaining)
	}
}

// BenchmarkSeam measures parse, the decision seam and reply encoding for one
// warm key of every decision kind.
func BenchmarkSeam(b *testing.B) {
	s := newTestServer(b, Config{})
	p, err := policy.Parse("pol", []string{"SLIDE", "1000000", "60", "TOKEN", "1000000", "10", "1s", "PENALTY", "1s"})
	require.NoError(b, err)
	s.pol.byName[p.Name] = p
	c := &client{}
	for _, tc := range seamCommands() {
		b.Run(string(tc.args[0])+"/"+string(tc.args[len(tc.args)-1]), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				key, r, err := tc.parse(s, c, tc.args)
				if err != nil {
					b.Fatal(err)
				}
				r.now = t0 + int64(i)
				o, err := s.decide(key, &r)
				if err != nil {
					b.Fatal(err)
				}
				buf = decide.AppendDecision(buf[:0], o.d)
			}
		})
	}
}
