package server

import (
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/persistence/vfs"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryKeyedWriteDeclaresItsChanges holds the table to the rule that
// makes appendfsync always honest: a write command with keys names, in its
// entry, the keys it changes, so that a commit's failure takes its change
// back (durable.Writes.Run). A write without them keeps a change its client was
// told failed. Those listed below change no key of the store.
func TestEveryKeyedWriteDeclaresItsChanges(t *testing.T) {
	none := map[string]string{
		"move":   "one database: MOVE changes nothing",
		"swapdb": "one database: SWAPDB changes nothing",
	}
	s := newTestServer(t, Config{})
	for name, cm := range s.table.Names() {
		if cm.Flags&core.FlagWrite == 0 || cm.Flags&core.FlagAllKeys != 0 || len(cm.Keys) == 0 {
			continue
		}
		if _, ok := none[name]; ok {
			continue
		}
		assert.NotNil(t, cm.Changes, "%s writes keys but declares no changes: under appendfsync always a failed commit would keep its change", name)
	}
}

// TestWritesTakenBackUnderAlways runs each write command of the lease,
// reservation and alias families once while the log's fsync fails: its
// client is told MISCONF, and every key it touched (a reservation's ledger
// too) holds exactly what it held before.
func TestWritesTakenBackUnderAlways(t *testing.T) {
	ledger := func(k string) string { return string(policy.AppendLedgerKey(nil, []byte(k))) }
	polKeys := func(k string) []string { // policy p's two rule keys of k, and its ledger
		p := &policy.Policy{Name: "p"}
		return []string{k, string(p.AppendRuleKey(nil, 0, []byte(k))), string(p.AppendRuleKey(nil, 1, []byte(k))), string(p.AppendLedgerKey(nil, []byte(k)))}
	}
	for _, tc := range []struct {
		name  string
		setup [][]any
		write []any
		keys  []string // the keys to compare, routed by the first
	}{
		{"acquire", [][]any{{"RL.ACQUIRE", "l", 5, 60, "ID", "x"}}, []any{"RL.ACQUIRE", "l", 5, 60, "ID", "y"}, []string{"l"}},
		{"acquire-new", nil, []any{"RL.ACQUIRE", "l", 5, 60}, []string{"l"}},
		{"renew", [][]any{{"RL.ACQUIRE", "l", 5, 60, "ID", "x"}}, []any{"RL.RENEW", "l", "x", 600}, []string{"l"}},
		{"release", [][]any{{"RL.ACQUIRE", "l", 5, 60, "ID", "x"}}, []any{"RL.RELEASE", "l", "x"}, []string{"l"}},
		{"reserve", [][]any{{"RL.RESERVE", "r", "SLIDE", 10, 60, "COST", 3, "TTL", 60, "ID", "a"}},
			[]any{"RL.RESERVE", "r", "SLIDE", 10, 60, "COST", 2, "TTL", 60, "ID", "b"}, []string{"r", ledger("r")}},
		{"commit", [][]any{{"RL.RESERVE", "r", "SLIDE", 10, 60, "COST", 3, "TTL", 60, "ID", "a"}},
			[]any{"RL.COMMIT", "r", "a", "ACTUAL", 1}, []string{"r", ledger("r")}},
		{"cancel", [][]any{{"RL.RESERVE", "r", "SLIDE", 10, 60, "COST", 3, "TTL", 60, "ID", "a"}},
			[]any{"RL.CANCEL", "r", "a"}, []string{"r", ledger("r")}},
		{"refund", [][]any{{"RL.SLIDE", "r", 10, 60, "COST", 4}}, []any{"RL.REFUND", "r", "COST", 2}, []string{"r", ledger("r")}},
		{"reserve-policy", [][]any{{"RL.POLICY", "SET", "p", "SLIDE", 10, 60, "FIXED", 10, 60}},
			[]any{"RL.RESERVE", "r", "POLICY", "p", "COST", 2, "TTL", 60, "ID", "b"}, polKeys("r")},
		{"commit-policy", [][]any{{"RL.POLICY", "SET", "p", "SLIDE", 10, 60, "FIXED", 10, 60}, {"RL.RESERVE", "r", "POLICY", "p", "COST", 2, "TTL", 60, "ID", "b"}},
			[]any{"RL.COMMIT", "r", "b", "ACTUAL", 5, "POLICY", "p"}, polKeys("r")},
		{"gcra", [][]any{{"GCRA", "g", 5, 1, 1}}, []any{"GCRA", "g", 5, 1, 1}, []string{"g"}},
		{"throttle", [][]any{{"THROTTLE", "t", 5, 1, 1}}, []any{"THROTTLE", "t", 5, 1, 1}, []string{"t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := shard.New(shard.Config{Shards: 16})
			require.NoError(t, err)
			fsys := vfs.NewErrorFS(vfs.OS)
			st, _, err := persistence.Open(t.TempDir(), m, persistence.Options{Fsync: persistence.FsyncAlways, FS: fsys,
				FlushInterval: 5 * time.Millisecond, RetryInterval: time.Hour, SnapshotInterval: -1})
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			_, addr := startServer(t, Config{Store: m, Durability: st})
			ctx := ctxT(t)
			c := newClient(t, addr, 3)
			for _, cmd := range tc.setup {
				require.NoError(t, c.Do(ctx, cmd...).Err(), "%v", cmd)
			}
			route := []byte(tc.keys[0])
			before := make([]keyState, len(tc.keys))
			for i, k := range tc.keys {
				before[i].e, before[i].ok = m.Lookup([]byte(k), route)
			}

			fsys.Inject(func(op vfs.Op, _ string) error {
				if op == vfs.OpSync {
					return syscall.EIO
				}
				return nil
			})
			assert.EqualError(t, c.Do(ctx, tc.write...).Err(), "MISCONF Errors writing to the AOF file: Input/output error")
			for i, k := range tc.keys {
				e, ok := m.Lookup([]byte(k), route)
				after := keyState{e, ok}
				assert.True(t, shard.SameEntry(before[i].ptr(), after.ptr()), "%q: the refused write's change was taken back", k)
			}
		})
	}
}

// keyState is a key's entry, if it held one.
type keyState struct {
	e  shard.Entry
	ok bool
}

// ptr returns the entry, or nil if the key held no state.
func (st *keyState) ptr() *shard.Entry {
	if !st.ok {
		return nil
	}
	return &st.e
}
