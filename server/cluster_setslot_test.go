package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSetSlotStableReplies: RL.CLUSTER SETSLOT slot STABLE over a real
// socket, with Redis's errors: a slot this node owns that waits for no
// import is +OK (Redis's STABLE is idempotent), another node's slot is
// refused in Redis's words, and so are a bad slot, a bad action and a
// wrong arity; ALL answers how many waits it ended. RL.CLUSTER INFO and
// INFO cluster show the stuck imports' fields, and Redis's own CLUSTER
// SETSLOT, which redis-cli --cluster fix sends, is no command here. The
// end of a wait itself is TestOperatorEndsAnImportThatWaitsForever's
// (package handoff): no import waits that long in a healthy cluster.
func TestSetSlotStableReplies(t *testing.T) {
	nodes := startTestCluster(t, 2, clusterOpts{secret: []byte("k")})
	ctx := ctxT(t)
	c := newClient(t, nodes[0].addr, 2)
	v := nodes[0].ml.View()
	var mine, theirs int = -1, -1
	for slot := range cluster.Slots {
		switch owner := v.Table.Owner(slot).Name; {
		case owner == nodes[0].name && mine < 0:
			mine = slot
		case owner != nodes[0].name && theirs < 0:
			theirs = slot
		}
	}
	require.True(t, mine >= 0 && theirs >= 0)

	for _, stable := range []string{"STABLE", "stable"} {
		rep, err := c.Do(ctx, "RL.CLUSTER", "SETSLOT", mine, stable).Result()
		require.NoError(t, err, "a slot this node owns, which waits for nothing")
		assert.Equal(t, "OK", rep)
	}
	n, err := c.Do(ctx, "RL.CLUSTER", "SETSLOT", "all", "STABLE").Int64()
	require.NoError(t, err)
	assert.Zero(t, n, "no import waits")

	errs := []struct {
		args []any
		want string
	}{
		{[]any{"SETSLOT", theirs, "STABLE"}, fmt.Sprintf("ERR I'm not the owner of hash slot %d", theirs)},
		{[]any{"SETSLOT", cluster.Slots, "STABLE"}, "ERR Invalid or out of range slot"},
		{[]any{"SETSLOT", -1, "STABLE"}, "ERR Invalid or out of range slot"},
		{[]any{"SETSLOT", "x", "STABLE"}, "ERR Invalid or out of range slot"},
		{[]any{"SETSLOT", mine, "MIGRATING", nodes[1].name}, "ERR Invalid RL.CLUSTER SETSLOT action or number of arguments. Try RL.CLUSTER HELP"},
		{[]any{"SETSLOT", mine, "STABLE", "now"}, "ERR Invalid RL.CLUSTER SETSLOT action or number of arguments. Try RL.CLUSTER HELP"},
		{[]any{"SETSLOT", mine}, "ERR wrong number of arguments for 'rl.cluster|setslot' command"},
		{[]any{"NOSUCH"}, "ERR unknown subcommand 'NOSUCH'. Try RL.CLUSTER HELP."},
	}
	for _, e := range errs {
		err := c.Do(ctx, append([]any{"RL.CLUSTER"}, e.args...)...).Err()
		assert.EqualError(t, err, e.want, "RL.CLUSTER %v", e.args)
	}
	err = c.Do(ctx, "CLUSTER", "SETSLOT", mine, "STABLE").Err()
	assert.EqualError(t, err, "ERR unknown subcommand 'SETSLOT'. Try CLUSTER HELP.", "redis-cli --cluster fix's own command does nothing here")

	help, err := c.Do(ctx, "RL.CLUSTER", "HELP").StringSlice()
	require.NoError(t, err)
	assert.Contains(t, strings.Join(help, "\n"), "SETSLOT: Ends a slot's import wait")

	info := clusterInfo(t, nodes[0])
	for _, f := range []string{"handoff_import_slots_stuck", "handoff_import_longest_wait_ms", "handoff_imports_ended_by_operator"} {
		assert.Equal(t, "0", info[f], "RL.CLUSTER INFO %s", f)
	}
	section, err := c.Info(ctx, "cluster").Result()
	require.NoError(t, err)
	assert.Contains(t, section, "rl_cluster_handoff_import_slots_stuck:0\r\n")
	assert.Contains(t, section, "rl_cluster_handoff_imports_ended_by_operator:0\r\n")

	if out := redisCLIIfInstalled(t, nodes[0].addr, "RL.CLUSTER", "SETSLOT", strconv.Itoa(theirs), "STABLE"); out != "" {
		assert.Equal(t, fmt.Sprintf("ERR I'm not the owner of hash slot %d", theirs), strings.TrimSpace(out))
	}
}

// TestSetSlotIsAnAdminCommand: RL.CLUSTER SETSLOT is classified as
// RL.CLUSTER FORGET is: the admin flag, and @admin and @dangerous, which
// tools and ACL rules read; without a cluster it answers as every
// CLUSTER command does.
func TestSetSlotIsAnAdminCommand(t *testing.T) {
	_, addr := startServer(t, Config{})
	ctx := ctxT(t)
	c := newClient(t, addr, 3)
	info, err := c.Do(ctx, "COMMAND", "INFO", "rl.cluster").Slice()
	require.NoError(t, err)
	subs := map[string][]any{}
	for _, e := range info[0].([]any)[9].([]any) { // its subcommands, as Redis 7 lists them
		entry := e.([]any)
		subs[entry[0].(string)] = entry
	}
	for _, name := range []string{"rl.cluster|forget", "rl.cluster|setslot"} {
		require.Contains(t, subs, name)
		assert.Contains(t, subs[name][2], "admin", "%s's flags", name)
		assert.Subset(t, subs[name][6], []any{"@admin", "@dangerous"}, "%s's ACL categories", name)
	}
	assert.Equal(t, subs["rl.cluster|forget"][2], subs["rl.cluster|setslot"][2], "the same flags")
	assert.Equal(t, subs["rl.cluster|forget"][6], subs["rl.cluster|setslot"][6], "the same ACL categories")
	assert.EqualError(t, c.Do(ctx, "RL.CLUSTER", "SETSLOT", "0", "STABLE").Err(), route.ErrNoCluster)
}

// TestSetSlotEndsAStuckImport: a joiner whose old owners' handoffs never
// reach it (their RL.PEER IMPORTs fail) waits for its slots: the old
// owners serve them while they retry, then keep their keys for it and
// answer its RL.PEER RELEASED that they hold them, as long as the keys
// cannot go. RL.CLUSTER INFO counts the stuck slots; RL.CLUSTER SETSLOT
// refuses while a handoff may still be retried (10 s), then ends the
// wait, and the slot is served from what the joiner holds: a key used up
// on its old owner starts again, the loss the operator chose.
func TestSetSlotEndsAStuckImport(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a failing handoff's retries (10 s)")
	}
	var allowed atomic.Pointer[map[string]bool]
	var serves atomic.Pointer[string] // the last answer to an RL.PEER SERVES
	o := clusterOpts{secret: []byte("k"), wrapMover: func(f cluster.Forwarder) cluster.Forwarder {
		return &blockImports{next: f, allowed: &allowed, serves: &serves}
	}}
	nodes := startTestCluster(t, 2, o)
	ctx := ctxT(t)
	three, err := cluster.NewTable(1, []cluster.Node{{Name: "node0"}, {Name: "node1"}, {Name: "node2"}})
	require.NoError(t, err)
	var key string
	for i := 0; key == ""; i++ {
		if k := fmt.Sprint("stuck:", i); three.Owner(cluster.Slot([]byte(k))).Name == "node2" {
			key = k
		}
	}
	slot := cluster.Slot([]byte(key))
	rdb := newClient(t, nodes[0].addr, 2)
	for i := range 5 {
		rep, err := rdb.Do(ctx, "RL.SLIDE", key, 5, 3600).Int64Slice()
		require.NoError(t, err)
		require.Equal(t, int64(1), rep[0], "admission %d", i+1)
	}
	allowed.Store(&map[string]bool{nodes[0].addr: true, nodes[1].addr: true})
	joiner := startTestNode(t, "node2", []string{nodes[0].ml.GossipAddr()}, o)
	waitOwners(t, append(nodes, joiner), 3)
	c := newClient(t, joiner.addr, 2)

	require.Eventually(t, func() bool { return clusterInfo(t, joiner)["handoff_import_slots_stuck"] != "0" },
		deadline, 50*time.Millisecond, "the joiner's imports wait longer than the import wait")
	err = c.Do(ctx, "RL.CLUSTER", "SETSLOT", slot, "STABLE").Err()
	require.Error(t, err, "refused: the old owner may still retry its handoff")
	assert.Regexp(t, `^ERR slot \d+ has waited \d+ ms for node[01]: its handoff may be under way until it has waited 10000 ms$`, err.Error())
	require.Equal(t, handoff.ModeImporting, joiner.srv.ho.State(slot).Mode())

	require.Eventually(t, func() bool {
		_, out0 := nodes[0].srv.ho.Moving()
		_, out1 := nodes[1].srv.ho.Moving()
		return out0+out1 == 0
	}, deadline, 50*time.Millisecond, "the old owners give their handoffs up, keeping the keys for the joiner")
	require.Eventually(t, func() bool { return c.Do(ctx, "RL.CLUSTER", "SETSLOT", slot, "STABLE").Err() == nil },
		deadline, 100*time.Millisecond, "ended once it has waited 10 s")
	assert.Nil(t, joiner.srv.ho.State(slot), "served by the joiner")
	require.NotNil(t, serves.Load())
	assert.Equal(t, "+NONE", strings.TrimSpace(*serves.Load()), "the old owner, asked, serves the slot no more (its table names the joiner)")
	assert.Equal(t, "1", clusterInfo(t, joiner)["handoff_imports_ended_by_operator"])
	rep, err := rdb.Do(ctx, "RL.SLIDE", key, 5, 3600).Int64Slice()
	require.NoError(t, err)
	assert.Equal(t, int64(1), rep[0], "served from what the joiner holds (nothing): the loss the operator chose")

	n, err := c.Do(ctx, "RL.CLUSTER", "SETSLOT", "ALL", "STABLE").Int64()
	require.NoError(t, err)
	assert.Positive(t, n, "the joiner's other stuck slots")
	info := clusterInfo(t, joiner)
	assert.Equal(t, "0", info["handoff_import_slots_stuck"])
	assert.Equal(t, strconv.FormatInt(n+1, 10), info["handoff_imports_ended_by_operator"])
}

// blockImports fails every RL.PEER IMPORT its node sends to an address
// outside allowed, once allowed is set: a handoff that never arrives. It
// keeps the last answer to an RL.PEER SERVES in serves.
type blockImports struct {
	next    cluster.Forwarder
	allowed *atomic.Pointer[map[string]bool]
	serves  *atomic.Pointer[string]
}

func (b *blockImports) Forward(ctx context.Context, addr string, cmds [][][]byte) ([][]byte, error) {
	sub := ""
	if len(cmds[0]) > 1 {
		sub = string(cmds[0][1])
	}
	if ok := b.allowed.Load(); ok != nil && !(*ok)[addr] && sub == cluster.PeerImport {
		return nil, errors.New("test: the handoff does not arrive")
	}
	reps, err := b.next.Forward(ctx, addr, cmds)
	if err == nil && sub == cluster.PeerServes {
		rep := string(reps[0])
		b.serves.Store(&rep)
	}
	return reps, err
}

func (b *blockImports) Send(addr string, lane uint64, payload []byte, n int, r cluster.Replier) {
	b.next.Send(addr, lane, payload, n, r)
}

// redisCLIIfInstalled is redisCLI's output, or "" where redis-cli is not
// installed.
func redisCLIIfInstalled(t *testing.T, addr string, args ...string) string {
	t.Helper()
	var out string
	t.Run("redis-cli", func(t *testing.T) { out = redisCLI(t, addr, "", args...) })
	return out
}
