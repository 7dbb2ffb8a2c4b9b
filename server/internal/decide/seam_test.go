package decide

import (
	"bytes"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/redcon"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// t0 is the time the seam's tests decide at.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

// testFront is a server outside regions and a cluster, and a tracker
// whose count says someone watches, so the seam tells it every change.
type testFront struct{ watchers atomic.Int32 }

func (f *testFront) Changed(*core.Session, []byte)                          {}
func (f *testFront) Watchers() *atomic.Int32                                { return &f.watchers }
func (f *testFront) RefusedGlobal(*core.Session, []byte, string) bool       { return false }
func (f *testFront) RefusedGlobalPolicy(*core.Session, []byte, []byte) bool { return false }
func (f *testFront) Owner() string                                          { return "" }

// seamDecisions returns the decision commands on a store of their own, with
// the policy seamCommands use.
func seamDecisions(tb testing.TB) *Decisions {
	m, err := shard.New(shard.Config{})
	require.NoError(tb, err)
	pols := NewPolicies(PolicyConfig{Store: m, Max: 10})
	x := &core.Session{Out: redcon.NewWriter(io.Discard)}
	pols.set(x, byteArgs("RL.POLICY", "SET", "pol", "SLIDE", "1000000", "60", "TOKEN", "1000000", "10", "1s", "PENALTY", "1s"))
	require.NotNil(tb, pols.Get([]byte("pol")))
	clock := &Clock{Read: func() time.Time { return time.Unix(0, t0) }}
	f := &testFront{}
	f.watchers.Store(1)
	return New(Config{Store: m, Table: core.NewTable(), Clock: clock, Policies: pols, Front: f, Tracker: f, Slots: new(core.Slots)})
}

// seamCommands are one command of every decision kind, with the parser its
// table entry runs.
func seamCommands() []struct {
	parse Parser
	args  [][]byte
} {
	return []struct {
		parse Parser
		args  [][]byte
	}{
		{NativeParser(window.KindSlide), byteArgs("RL.SLIDE", "s", "1000000", "60", "COST", "2")},
		{NativeParser(window.KindToken), byteArgs("RL.TOKEN", "t", "1000000", "10", "1s", "PEEK")},
		{NativeParser(window.KindFixed), byteArgs("RL.FIXED", "f", "1000000", "500ms")},
		{NativeParser(window.KindFixed), byteArgs("RL.FIXED", "ff", "1000000", "500ms", "ANCHOR", "FIRST")},
		{NativeParser(window.KindLog), byteArgs("RL.LOG", "l", "4000", "1m", "COST", "1")},
		{NativeParser(window.KindLeaky), byteArgs("RL.LEAKY", "q", "1000000", "1000000", "1s")},
		{parseThrottleReq, byteArgs("CL.THROTTLE", "c", "1000000", "1000000", "60", "1")},
		{parseThrottleReq, byteArgs("CL.THROTTLE", "c", "15", "30", "60", "0")},
		{parseCheckReq, byteArgs("RL.CHECK", "pol", "k", "COST", "3")},
		{parseCheckReq, byteArgs("RL.CHECK", "pol", "k", "PEEK")},
	}
}

// TestRequestRoundTrips checks that a request is self-contained: written back
// as a command (what a cluster forwards), it parses into the same request.
func TestRequestRoundTrips(t *testing.T) {
	d, c := seamDecisions(t), &Conn{}
	for _, tc := range seamCommands() {
		key, r, err := tc.parse(d, c, tc.args)
		require.NoError(t, err, "%q", tc.args)
		again := r.AppendCommand(nil, key)
		key2, r2, err := tc.parse(d, c, again)
		require.NoError(t, err, "%q", again)
		assert.Equal(t, key, key2, "%q", again)
		assert.Equal(t, r, r2, "%q became %q", tc.args, again)
	}
}

// TestDecisionSeamAllocs guards the hot path of every decision command:
// parsing a warm key's command, deciding it through the seam and encoding
// the reply allocate nothing.
func TestDecisionSeamAllocs(t *testing.T) {
	d, c := seamDecisions(t), &Conn{}
	buf := make([]byte, 0, 64)
	for _, tc := range seamCommands() {
		step := func() {
			key, r, err := tc.parse(d, c, tc.args)
			if err != nil {
				panic(err)
			}
			r.Now = t0
			o, err := d.Decide(key, &r)
			if err != nil {
				panic(err)
			}
			buf = AppendDecision(buf[:0], o.D)
		}
		step()
		assert.Zerof(t, quietAllocsPerRun(1000, step), "allocs for %q", tc.args)
	}
}

// TestCountAllocatesNothing: counting a decision, in the shared counters
// or a connection's Tally, allocates nothing.
func TestCountAllocatesNothing(t *testing.T) {
	d := seamDecisions(t)
	r := &Request{Params: window.Params{Kind: window.KindSlide}}
	o := &Outcome{}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { d.countDecision(r, o, false) }))
	assert.Positive(t, d.Counts[window.KindSlide].Denied.Load())
	r.conn = &Conn{}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { d.countDecision(r, o, false) }))
	r.conn.Tally.Flush(&d.Counts)
	assert.Greater(t, d.Counts[window.KindSlide].Denied.Load(), int64(1000))
}

// quietAllocsPerRun is testing.AllocsPerRun, the least of three tries.
// AllocsPerRun counts every malloc of the process while f runs, so on a
// loaded host, where 1000 runs can take long enough, goroutines a previous
// test left winding down can add a thousand and make it report 1. An f that
// allocates does so in every try, so the least of three still catches it.
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
	d := seamDecisions(t)
	long := bytes.Repeat([]byte("k"), 2000)
	for want := int64(999999); want > 999996; want-- {
		key, r, err := parseCheckReq(d, nil, [][]byte{[]byte("RL.CHECK"), []byte("pol"), long})
		require.NoError(t, err)
		r.Now = t0
		o, err := d.Decide(key, &r)
		require.NoError(t, err)
		assert.Equal(t, want, o.D.Remaining)
	}
}

// BenchmarkSeam measures parse, the decision seam and reply encoding for one
// warm key of every decision kind.
func BenchmarkSeam(b *testing.B) {
	d, c := seamDecisions(b), &Conn{}
	for _, tc := range seamCommands() {
		b.Run(string(tc.args[0])+"/"+string(tc.args[len(tc.args)-1]), func(b *testing.B) {
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				key, r, err := tc.parse(d, c, tc.args)
				if err != nil {
					b.Fatal(err)
				}
				r.Now = t0 + int64(i)
				o, err := d.Decide(key, &r)
				if err != nil {
					b.Fatal(err)
				}
				buf = AppendDecision(buf[:0], o.D)
			}
		})
	}
}
