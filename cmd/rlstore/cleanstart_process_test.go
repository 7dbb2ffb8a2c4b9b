package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startupWarnings are the WARN lines every node of the README's cluster
// logs by design: it runs without a cluster secret (loopback only).
var startupWarnings = []string{
	`msg="cluster: no secret set; any local process can act as a node of this loopback-only cluster.`,
}

// TestProcessREADMEClusterLogsCleanly starts the README's 3-node cluster
// (each with a data dir, on ports the kernel picks, with its default
// timing) and waits until the joins are done: nothing restarted and
// nothing failed, so no node may log a warning, an error, or a line about
// a restarted node.
func TestProcessREADMEClusterLogsCleanly(t *testing.T) {
	start := func(name, seed string) *clusterProc {
		args := []string{"--port", "0", "--node-name", name, "--cluster-addr", "127.0.0.1:0", "--data-dir", t.TempDir()}
		if seed != "" {
			args = append(args, "--join", seed)
		}
		p := startProc(t, nil, args...)
		return &clusterProc{proc: p, name: name, addr: p.Addr(t), gossip: p.WaitLog(t, gossipLine)[1]}
	}
	a := start("a", "")
	ps := []*clusterProc{a, start("b", a.gossip), start("c", a.gossip)}
	for _, p := range ps {
		waitClusterSize(t, p, 3)
	}
	for _, p := range ps {
		waitHandedOver(t, p)
	}
	// Last come the backups' first full syncs: wait for each node's two.
	for _, p := range ps {
		c := newClient(t, p.addr)
		require.Eventually(t, func() bool {
			info, err := c.Info(context.Background(), "replication").Result()
			return err == nil && strings.Count(info, "state=online") == 2
		}, deadline, 10*time.Millisecond, "%s's backups are in sync", p.name)
	}
	for _, p := range ps {
		for _, line := range strings.Split(p.Log.String(), "\n") {
			if expected(line) {
				continue
			}
			assert.NotRegexp(t, `level=(WARN|ERROR)`, line, "node %s", p.name)
			assert.NotContains(t, line, "restarted", "node %s", p.name)
		}
	}
}

func expected(line string) bool {
	for _, w := range startupWarnings {
		if strings.Contains(line, w) {
			return true
		}
	}
	return false
}
