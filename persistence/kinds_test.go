package persistence

import (
	"fmt"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// everyKind has one set of parameters per algorithm the store persists.
var everyKind = []window.Params{
	{Kind: window.KindSlide, Limit: 1000, Period: time.Hour},
	{Kind: window.KindToken, Limit: 100, Rate: 10, Period: time.Minute},
	{Kind: window.KindFixed, Limit: 1000, Period: time.Hour},
	{Kind: window.KindLog, Limit: 1000, Period: time.Hour},
	{Kind: window.KindLeaky, Limit: 100, Rate: 10, Period: time.Minute},
}

// TestStoreRoundTripEveryKind: each algorithm's state comes back equal through
// a snapshot and through the log, with Slide counters and Log entries both
// inline and in blocks (2 or 13 requests a key, a second apart).
func TestStoreRoundTripEveryKind(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, m, _ := openStore(t, dir, c.opts(FsyncEverysec))
	hit := func(prefix string) {
		for i, p := range everyKind {
			for n := range 2 + 11*(i%2) {
				key := fmt.Appendf(nil, "%s:%s:%d", prefix, p.Kind, i)
				_, err := st.m.Decide(key, p, c.nano()+int64(n)*int64(time.Second), 1, false)
				require.NoError(t, err)
			}
		}
	}
	hit("snap")
	require.NoError(t, st.Snapshot())
	hit("log")
	flushLog(t, st)
	want := liveAt(m, c.nano())
	require.Len(t, want, 2*len(everyKind))
	require.NoError(t, st.Close())

	st2, m2, rec := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	assert.Equal(t, want, exportAll(m2))
	assert.Positive(t, rec.Records, "the second half came from the log")
}

// TestPolicyStateReloadsWhereChecksFindIt: a policy's rule state lives in
// the shard of its user key, not its own; after a snapshot and the log are
// reloaded, the same multi-rule request must find it there.
func TestPolicyStateReloadsWhereChecksFindIt(t *testing.T) {
	dir, c := t.TempDir(), newClock()
	st, _, _ := openStore(t, dir, c.opts(FsyncEverysec))
	pol, err := policy.Parse("api", []string{"FIXED", "2", "1h", "SLIDE", "5", "1h"})
	require.NoError(t, err)
	multi := func(user string) (*shard.Multi, []byte) {
		q := &shard.Multi{Params: pol.Rules}
		for i := range pol.Rules {
			q.Keys = append(q.Keys, pol.AppendRuleKey(nil, i, []byte(user)))
		}
		return q, []byte(user)
	}
	charge := func(m *shard.Map, user string) window.Decision {
		q, route := multi(user)
		ds, _, err := m.DecideAll(route, q, c.nano(), 1, false, nil)
		require.NoError(t, err)
		return ds[0]
	}
	for i := range 20 {
		charge(st.m, fmt.Sprint("snap", i))
	}
	require.NoError(t, st.Snapshot())
	for i := range 20 {
		charge(st.m, fmt.Sprint("log", i))
	}
	flushLog(t, st)
	require.NoError(t, st.Close())

	st2, m2, _ := openStore(t, dir, c.opts(FsyncEverysec))
	defer st2.Close()
	for _, prefix := range []string{"snap", "log"} {
		for i := range 20 {
			d := charge(m2, fmt.Sprint(prefix, i))
			assert.Truef(t, d.Allowed, "%s%d", prefix, i)
			assert.EqualValuesf(t, 0, d.Remaining, "%s%d: the reloaded rule state counts the first request", prefix, i)
		}
	}
}
