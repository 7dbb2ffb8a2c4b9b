package loadtest

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/proc"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The expected slots are what CLUSTER KEYSLOT answers (Redis and rlstore).
func TestKeySlotIsRedisCluster(t *testing.T) {
	assert.Equal(t, uint16(0x31C3), crc16([]byte("123456789")), "CRC-16/XMODEM check value")
	for key, slot := range map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443,
		"{user1000}.followers": 3443, "user1000": 3443, "foo{}{bar}": 8363, "{}x": 10595} {
		assert.Equal(t, slot, keySlot([]byte(key)), key)
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := "aaa 127.0.0.1:7001@7001,a myself,master - 0 0 3 connected 0-5460 9000\n" +
		"bbb 127.0.0.1:7002@7002,b master - 0 0 3 connected 5461-8999 9001-16383\n"
	m, err := parseClusterNodes(text)
	require.NoError(t, err)
	assert.Equal(t, []string{"127.0.0.1:7001", "127.0.0.1:7002"}, m.addrs)
	assert.Equal(t, uint16(0), m.owner[0])
	assert.Equal(t, uint16(0), m.owner[9000])
	assert.Equal(t, uint16(1), m.owner[5461])
	assert.Equal(t, uint16(1), m.owner[16383])

	_, err = parseClusterNodes("aaa 127.0.0.1:7001@7001 master - 0 0 3 connected 0-100\n")
	assert.ErrorContains(t, err, "slot 101 has no owner")
	_, err = parseClusterNodes("aaa 127.0.0.1:7001@7001 master - 0 0 3 connected 0-99999\n")
	assert.ErrorContains(t, err, "bad slot range")
}

// TestEndToEndClusterAware drives two rlstore nodes as a cluster-aware
// client, batching per node and splitting each pipeline: every request
// must reach its owner, so neither node forwards any, and every request
// drawn is sent once.
func TestEndToEndClusterAware(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	g1, err := proc.FreePort()
	require.NoError(t, err)
	g2, err := proc.FreePort()
	require.NoError(t, err)
	var nodes []*proc.Server
	for i, args := range [][]string{
		{"--node-name", "a", "--cluster-addr", fmt.Sprintf("127.0.0.1:%d", g1)},
		{"--node-name", "b", "--cluster-addr", fmt.Sprintf("127.0.0.1:%d", g2), "--join", fmt.Sprintf("127.0.0.1:%d", g1)},
	} {
		s, err := proc.StartRlstore(ctx, rlstoreBin, args, io.Discard)
		require.NoError(t, err, "node %d", i)
		t.Cleanup(func() { assert.NoError(t, s.Stop()) })
		nodes = append(nodes, s)
	}
	for _, s := range nodes {
		require.Eventually(t, func() bool { return strings.Contains(clusterInfo(t, s.Addr), "rl_cluster_members:2") },
			20*time.Second, 20*time.Millisecond, "both nodes see each other")
	}
	// Until the join's slots have moved, the new owner sends their requests
	// back to the old one, and those count as forwarded.
	for _, s := range nodes {
		require.Eventually(t, func() bool {
			info := clusterInfo(t, s.Addr)
			return strings.Contains(info, "rl_cluster_handoff_moves_in_progress:0") &&
				strings.Contains(info, "rl_cluster_handoff_slots_importing:0") &&
				strings.Contains(info, "rl_cluster_handoff_slots_migrating:0")
		}, 20*time.Second, 20*time.Millisecond, "the join's handoff is over")
	}
	wl, err := NewWorkload("rl.slide", Limit{Limit: 20, Window: 2 * time.Second})
	require.NoError(t, err)
	for _, split := range []bool{false, true} {
		cfg := shortRun(nodes[0].Addr, wl, 200, true)
		cfg.Cluster, cfg.ClusterSplit = true, split
		cfg.Keys.Prefix += fmt.Sprint(split, ":")
		res, err := Run(ctx, cfg)
		require.NoError(t, err)
		assert.Zero(t, res.Errors, res.FirstError)
		assert.Equal(t, int64(4000), res.Requests, "split %v", split)
		assert.Equal(t, int64(4000), res.Allowed+res.Denied, "split %v", split)
		assert.Zero(t, res.Accuracy.OverAdmitted, "over-admission, split %v", split)
	}
	for _, s := range nodes {
		info := clusterInfo(t, s.Addr)
		assert.Contains(t, info, "rl_cluster_forwarded:0", "a cluster-aware client's requests go to their owner")
		assert.Regexp(t, `cmdstat_rl\.slide:calls=[1-9]`, commandStats(t, s.Addr), "each node serves its keys")
	}
}

func clusterInfo(t *testing.T, addr string) string {
	return infoSection(t, addr, "cluster")
}

func commandStats(t *testing.T, addr string) string {
	return infoSection(t, addr, "commandstats")
}

func infoSection(t *testing.T, addr, section string) string {
	t.Helper()
	cl, err := resp.Dial(context.Background(), addr)
	require.NoError(t, err)
	defer cl.Close()
	rep, err := cl.DoOK(context.Background(), "INFO", section)
	require.NoError(t, err)
	return string(rep.Str)
}
