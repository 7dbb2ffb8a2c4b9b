package persistence

import (
	"fmt"
	"testing"

	"github.com/rlstore/rlstore/internal/crashtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPoliciesKill9: a policy is there after kill -9 issued right after Put returned.
func TestPoliciesKill9(t *testing.T) {
	if dir, ok := crashtest.Child(t); ok {
		p, _, err := OpenPolicies(dir)
		for i := 0; err == nil; i++ {
			if err = p.Put(fmt.Sprintf("policy%d", i), fmt.Appendf(nil, "SLIDE %d 60", i)); err == nil {
				crashtest.Step("ok %d", i)
			}
		}
		crashtest.Exit(err)
	}
	dir := t.TempDir()
	crashtest.KillAfter(t, dir, "ok 40")
	p, warns, err := OpenPolicies(dir)
	require.NoError(t, err)
	defer p.Close()
	t.Logf("after kill -9: %d policies, warnings %v", len(p.List()), warns)
	for i := range 41 {
		def, ok := p.Get(fmt.Sprintf("policy%d", i))
		require.Truef(t, ok, "policy%d acknowledged but lost", i)
		assert.Equal(t, fmt.Sprintf("SLIDE %d 60", i), string(def))
	}
}

// TestStoreKill9Always: under FsyncAlways every decision acknowledged (Commit
// returned) before kill -9 is loaded afterwards.
func TestStoreKill9Always(t *testing.T) {
	c := newClock()
	if dir, ok := crashtest.Child(t); ok {
		st, _, err := Open(dir, newMap(t, 16), c.opts(FsyncAlways))
		for i := 0; err == nil; i++ {
			if _, err = st.m.Decide(fmt.Appendf(nil, "k%d", i), tokenP, c.nano(), 1+int64(i%5), false); err == nil {
				if err = st.Commit(); err == nil {
					crashtest.Step("ok %d", i)
				}
			}
		}
		crashtest.Exit(err)
	}
	dir := t.TempDir()
	crashtest.KillAfter(t, dir, "ok 300")
	st, m, _ := openStore(t, dir, c.opts(FsyncAlways))
	defer st.Close()
	for i := range 301 {
		inf, ok := m.Get(fmt.Appendf(nil, "k%d", i), c.nano())
		require.Truef(t, ok, "k%d acknowledged but lost", i)
		assert.Equalf(t, tokenP.Limit-1-int64(i%5), inf.Count, "k%d tokens", i)
	}
}
