package persistence

import (
	"fmt"
	"testing"
	"time"

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
