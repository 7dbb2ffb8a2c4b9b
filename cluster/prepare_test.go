package cluster

import (
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepareThenStart: a prepared membership has this node's view alone
// (waiting, since it has a seed to meet) and gossips nothing, so no
// member can reach its state or tell it of a change; Start hands it its
// state and the one told of changes, and only then does it meet the
// seed, merge its state and report the joined view.
func TestPrepareThenStart(t *testing.T) {
	seed := startNode(t, "n0", nil)
	seed.state.set("from n0, the longer state")
	cfg := Config{NodeName: "n1", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:11", Seeds: []string{seed.GossipAddr()},
		Timing: TestTiming(), Logger: slog.New(slog.DiscardHandler)}
	m, err := Prepare(cfg)
	require.NoError(t, err)
	t.Cleanup(m.Kill)
	v := m.View()
	assert.True(t, v.Waiting, "a prepared node with a seed waits to meet it")
	assert.Equal(t, []Node{{Name: "n1", Addr: "127.0.0.1:11"}}, v.Table.Nodes())
	m.Broadcast([]byte("x")) // does not need gossip yet; shorter than the state, so it never wins
	assert.Len(t, seed.View().Table.Nodes(), 1, "the seed has not met the prepared node")

	state := &lwwState{}
	var mu sync.Mutex
	var views []View
	require.NoError(t, m.Start(state, func(v View) { mu.Lock(); views = append(views, v); mu.Unlock() }))
	waitMembers(t, []*testNode{seed, {Membership: m}}, 2)
	mu.Lock()
	told := len(views)
	mu.Unlock()
	assert.NotZero(t, told, "Start's onChange is told of the joined view")
	require.Eventually(t, func() bool { return state.get() == "from n0, the longer state" }, 5*time.Second, 10*time.Millisecond,
		"the seed's state reaches the started node")
}

// TestPreparedCloses: a membership prepared and never started closes,
// and is killed, without gossip to leave.
func TestPreparedCloses(t *testing.T) {
	m, err := Prepare(Config{NodeName: "n", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Timing: TestTiming(),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, m.Close(time.Second))
	m.Kill()
}

// TestPreparedGossipAddr: a prepared membership has no gossip address yet
// (its port 0 is picked by Start); GossipAddr says so with an empty
// string, where it dereferenced memberlist's nil Memberlist, and gives
// the bound address once started.
func TestPreparedGossipAddr(t *testing.T) {
	m, err := Prepare(Config{NodeName: "n", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Timing: TestTiming(),
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(m.Kill)
	assert.Empty(t, m.GossipAddr(), "before Start")
	require.NoError(t, m.Start(nil, nil))
	host, port, err := net.SplitHostPort(m.GossipAddr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port, "Start picked the port")
}
