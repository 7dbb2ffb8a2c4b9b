package server

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/introspect"
	"github.com/rlstore/rlstore/server/internal/keyspace"
	"github.com/rlstore/rlstore/server/internal/multi"
	"github.com/rlstore/rlstore/server/internal/observe"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// infoDeviations are the places where rlstore's COMMAND INFO differs from
// redis-server 7's on purpose, by command and field (2: flags, 6: ACL
// categories, 8: key specs), with the reason.
var infoDeviations = map[string]map[int]string{
	"monitor": {2: "rlstore refuses MONITOR inside MULTI (no_multi); Redis queues it and fails it at EXEC"},
}

// commandsByName indexes COMMAND INFO's descriptions, subcommands included.
func commandsByName(n respNode, into map[string]respNode) map[string]respNode {
	for _, e := range n.elems {
		if e.null {
			continue
		}
		into[e.elems[0].str] = e
		commandsByName(e.elems[9], into)
	}
	return into
}

// TestCommandInfoMatchesRedis: for every command and subcommand rlstore
// shares with Redis, COMMAND INFO gives Redis 7's flags, key positions, ACL
// categories and key specs (testdata/redis7), save infoDeviations. Arity and
// tips may differ: rlstore takes fewer options of some commands.
func TestCommandInfoMatchesRedis(t *testing.T) {
	_, addr := startServer(t, Config{})
	conn := dialRaw(t, addr)
	rawCall(t, conn, "HELLO", "3")
	got := commandsByName(parseRESP(t, rawCall(t, conn, "COMMAND")), map[string]respNode{})
	want := commandsByName(redis7Golden(t, "command-info", 3), map[string]respNode{})
	shared := 0
	for name, w := range want {
		g, ok := got[name]
		if !ok {
			continue
		}
		shared++
		for _, field := range []int{2, 3, 4, 5, 6, 8} {
			d := firstDiff(w.elems[field], g.elems[field], name+" field "+strconv.Itoa(field))
			if why := infoDeviations[name][field]; why != "" {
				assert.NotEmptyf(t, d, "%s field %d is Redis's now: drop the deviation %q", name, field, why)
				continue
			}
			assert.Empty(t, d)
		}
	}
	assert.Greater(t, shared, 80, "commands and subcommands compared")
}

// TestCommandGetKeysMatchesRedis replays the recorded COMMAND GETKEYS and
// GETKEYSANDFLAGS calls and compares every reply, errors included.
func TestCommandGetKeysMatchesRedis(t *testing.T) {
	_, addr := startServer(t, Config{})
	calls := getKeysCalls()
	for _, proto := range []int{2, 3} {
		want := redis7GoldenAll(t, "command-getkeys", proto)
		require.Len(t, want, len(calls))
		conn := dialRaw(t, addr)
		rawCall(t, conn, "HELLO", strconv.Itoa(proto))
		for i, call := range calls {
			got := parseRESP(t, rawCall(t, conn, call...))
			assert.Empty(t, firstDiff(want[i], got, strings.Join(call, " ")), "RESP%d", proto)
		}
	}
}

// TestCommandGetKeysOfRLCommands: rlstore's own commands name their keys
// from their key specs too.
func TestCommandGetKeysOfRLCommands(t *testing.T) {
	_, addr := startServer(t, Config{})
	c, ctx := newClient(t, addr, 3), ctxT(t)
	for _, tc := range []struct {
		call []any
		want []any
	}{
		{[]any{"RL.SLIDE", "user:1", 5, 60}, []any{"user:1"}},
		{[]any{"rl.token", "t", 5, 1, "1s", "COST", 2}, []any{"t"}},
		{[]any{"CL.THROTTLE", "g", 15, 30, 60}, []any{"g"}},
		{[]any{"RL.CHECK", "api", "user:2"}, []any{"user:2"}},
		{[]any{"RL.INFO", "user:1"}, []any{"user:1"}},
	} {
		got, err := c.Do(ctx, append([]any{"COMMAND", "GETKEYS"}, tc.call...)...).Result()
		require.NoError(t, err, "%v", tc.call)
		assert.Equal(t, tc.want, got, "%v", tc.call)
	}
	got, err := c.Do(ctx, "COMMAND", "GETKEYSANDFLAGS", "RL.SLIDE", "k", 5, 60).Result()
	require.NoError(t, err)
	assert.Equal(t, []any{[]any{"k", []any{"RW", "access", "update"}}}, got)
	assert.EqualError(t, c.Do(ctx, "COMMAND", "GETKEYS", "RL.SLIDE", "k").Err(), introspect.ErrGetKeysArity)
	assert.EqualError(t, c.Do(ctx, "COMMAND", "GETKEYS", "RL.POLICY", "LIST").Err(), introspect.ErrGetKeysNoKeys)
}

// TestCommandTableIsConsistent: every command declares its flags,
// categories and key specs, and they agree with each other as Redis's do:
// @write with write, @read with readonly, @admin and @dangerous with admin,
// either @fast or @slow, @rl exactly for rlstore's own commands, key specs
// exactly for keyed commands, and key flags that say what the command does.
func TestCommandTableIsConsistent(t *testing.T) {
	s := newTestServer(t, Config{})
	specs := introspect.Specs()
	for _, cm := range s.dec.DecisionCommands() {
		specs[cm.Name] = core.Spec{} // a decision's entry declares its own (decide's decisionEntry)
	}
	users, err := auth.NewUsers("", "", new(core.Slots))
	require.NoError(t, err)
	for _, cm := range slices.Concat(keyspace.New(keyspace.Config{}).Commands(), users.Commands(), new(observe.Slowlog).Commands()) { // the packages' entries declare their own
		specs[cm.Name] = core.Spec{}
		for _, sc := range cm.Subs {
			specs[cm.Name+"|"+sc.Name] = core.Spec{}
		}
	}
	check := func(cm *core.Command) {
		_, declared := specs[cm.Name]
		assert.Truef(t, declared, "%s is not in introspect.Specs", cm.Name)
		assert.Equalf(t, cm.Flags&core.FlagWrite != 0, cm.ACL&core.CatWrite != 0, "%s: write and @write", cm.Name)
		assert.Equalf(t, cm.Flags&core.FlagReadonly != 0, cm.ACL&core.CatRead != 0, "%s: readonly and @read", cm.Name)
		assert.Falsef(t, cm.Flags&core.FlagWrite != 0 && cm.Flags&core.FlagReadonly != 0, "%s: write and readonly", cm.Name)
		if cm.Flags&core.FlagAdmin != 0 {
			assert.Equalf(t, core.CatAdmin|core.CatDangerous, cm.ACL&(core.CatAdmin|core.CatDangerous), "%s: admin is @admin @dangerous", cm.Name)
		}
		assert.NotEqualf(t, cm.ACL&core.CatFast != 0, cm.ACL&core.CatSlow != 0, "%s: @fast or @slow", cm.Name)
		own := strings.HasPrefix(cm.Name, "rl.") || strings.HasPrefix(cm.Name, "cl.")
		assert.Equalf(t, own, cm.ACL&core.CatRL != 0, "%s: @rl", cm.Name)
		assert.Equalf(t, cm.FirstKey > 0, len(cm.Keys) > 0, "%s: key specs for its keys", cm.Name)
		writes := cm.Flags&core.FlagWrite != 0
		assert.Falsef(t, !writes && (cm.Peek != nil || cm.Changes != nil || cm.Blind != nil || cm.Flags&core.FlagAnnounces != 0),
			"%s: only a write has a peek form, changes, a blind decision or announces its changes", cm.Name)
		assert.Falsef(t, cm.Flags&core.FlagCacheable != 0 && (cm.Flags&core.FlagReadonly == 0 || cm.FirstKey != 1 || cm.KeyStep != 1),
			"%s: a cacheable read reads every argument as a key", cm.Name)
		assert.Falsef(t, cm.Flags&core.FlagPrefetch != 0 && cm.FirstKey == 0, "%s: prefetched by its key", cm.Name)
		for _, k := range cm.Keys {
			if cm.Flags&core.FlagWrite != 0 {
				assert.NotZerof(t, k.Flags&(core.KeyRW|core.KeyOW|core.KeyRM), "%s writes its keys", cm.Name)
			} else {
				assert.NotZerof(t, k.Flags&core.KeyRO, "%s only reads its keys", cm.Name)
			}
		}
	}
	for name, cm := range s.table.Names() {
		if strings.HasPrefix(name, "test.") {
			continue
		}
		check(cm)
		for i := range cm.Subs {
			check(&cm.Subs[i])
		}
	}
}

// TestWatchInsideMulti: WATCH inside MULTI answers Redis's error at once and
// the transaction goes on, side by side with a redis-server.
func TestWatchInsideMulti(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := ctxT(t)
	ours := newClient(t, addr, 2).Conn() // one connection: MULTI belongs to it
	theirs := startRedisServer(t).Conn()
	t.Cleanup(func() { _ = ours.Close(); _ = theirs.Close() })
	for _, call := range [][]any{{"MULTI"}, {"WATCH", "k"}, {"PING"}, {"EXEC"}} {
		want, got := theirs.Do(ctx, call...), ours.Do(ctx, call...)
		assert.Equal(t, want.Err(), got.Err(), "%v", call)
		assert.Equal(t, want.Val(), got.Val(), "%v", call)
	}
	assert.EqualError(t, ours.Do(ctx, "WATCH", "k").Err(), multi.ErrNoWatch, "outside MULTI")
}

// TestWatchInsideMultiInACluster: a cluster node answers WATCH inside MULTI
// itself, whichever node owns the key, and the transaction goes on.
func TestWatchInsideMultiInACluster(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{})
	key := "w:0"
	for i := 0; ownerOf(nodes, key) == nodes[0]; i++ {
		key = "w:" + strconv.Itoa(i)
	}
	c, ctx := newClient(t, nodes[0].addr, 2).Conn(), ctxT(t)
	t.Cleanup(func() { _ = c.Close() })
	require.NoError(t, c.Do(ctx, "MULTI").Err())
	assert.EqualError(t, c.Do(ctx, "WATCH", key).Err(), multi.ErrWatchInMulti, "%s is owned by the other node", key)
	require.Equal(t, "QUEUED", c.Do(ctx, "PING").Val())
	assert.Equal(t, []any{"PONG"}, c.Do(ctx, "EXEC").Val())
}
