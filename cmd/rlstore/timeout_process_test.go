package main

import (
	"os/exec"
	"regexp"
	"syscall"
	"testing"

	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
)

// TestProcessTimeoutLeavesGracefully is the case: GNU timeout
// sends SIGTERM to the node and then to its whole process group, so the
// node gets it twice. The second must not cut the graceful leave short, as
// Redis ignores a SIGTERM while it shuts down. SIGTERM to timeout itself
// makes it do what it does when its time is up, at a moment the test picks.
func TestProcessTimeoutLeavesGracefully(t *testing.T) {
	bin, err := exec.LookPath("timeout")
	if err != nil {
		t.Skip("GNU timeout is not installed")
	}
	p0 := startClusterProc(t, "p0", "")
	args := []string{"3600", rlstoreBin, "--port", "0", "--node-name", "p1",
		"--cluster-addr", "127.0.0.1:0", "--cluster-timing", "fast", "--join", p0.gossip}
	p1 := rlstoretest.Start(t, bin, nil, args...)
	cp1 := &clusterProc{proc: p1, name: "p1", addr: p1.Addr(t)}
	for _, p := range []*clusterProc{p0, cp1} {
		waitClusterSize(t, p, 2)
		waitHandedOver(t, p)
	}
	c0 := newClient(t, p0.addr)
	key := keyOwnedBy(t, c0, "p1", "leave:")
	assert.Equal(t, []int64{1, 3, 2}, slide(t, c0, key)[:3])

	p1.Signal(t, syscall.SIGTERM)
	// The kernel merges the two SIGTERMs when the second comes before the
	// first is taken, so send the group another, as timeout does, once the
	// node says it is leaving, to be sure one lands during the leave.
	p1.WaitLog(t, regexp.MustCompile(`msg="signal received: draining clients`))
	assert.NoError(t, syscall.Kill(-p1.Cmd.Process.Pid, syscall.SIGTERM), "timeout runs in a process group of its own")
	assert.Equal(t, 0, p1.ExitCode(t), "timeout exits with rlstore's code")
	log := p1.Log.String()
	assert.Regexp(t, `msg="cluster: handed slots over" to=p0`, log, "the leave handed p1's slots to p0")
	assert.Contains(t, log, `msg="shutdown complete"`)
	assert.NotContains(t, log, "second signal")
	assert.Contains(t, log, `level=INFO msg="signal received while shutting down: ignored`)
	waitClusterSize(t, p0, 1)
	assert.Equal(t, []int64{1, 3, 1}, slide(t, c0, key)[:3], "p1's state moved to p0")
}
