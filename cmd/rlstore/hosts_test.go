package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/require"
)

// The pause and restart tests run each node on a host of its own. As root
// (with ip), a host is a network namespace rlr<i> whose veth hangs on a
// bridge rlrbr in the test's own namespace, on 10.231.34.0/24: the bridge
// is .254, node i is .i+1, and the test's clients reach every node through
// the bridge as they would reach real hosts. Elsewhere, or with
// RL_HOSTS=loopback, every host is this one's loopback. The test bodies are
// the same either way. Everything a namespace run builds is removed when
// its test ends, and what a killed run left is removed first.
const (
	hostNet    = "10.231.34."
	hostBridge = "rlrbr"
	hostKey    = "cmxyLXRlc3Qta2V5LTAxMjM0NTY3ODlhYmNkZWYwMTI=" // 32 bytes
)

// nodeHost is where one node of a test runs: a network namespace of its own
// with its own address, or loopback (ns empty).
type nodeHost struct {
	ns, ip string
}

var loopbackHost = nodeHost{ip: "127.0.0.1"}

// loopbackHosts returns n loopback hosts.
func loopbackHosts(n int) []nodeHost {
	hs := make([]nodeHost, n)
	for i := range hs {
		hs[i] = loopbackHost
	}
	return hs
}

// testHosts returns n hosts for a test's nodes: network namespaces where
// the test can build them, loopback otherwise (it says which in the log).
func testHosts(t *testing.T, n int) []nodeHost {
	t.Helper()
	why := netnsMissing("ip")
	if os.Getenv("RL_HOSTS") == "loopback" {
		why = "RL_HOSTS=loopback"
	}
	if why != "" {
		t.Logf("nodes on loopback: %s", why)
		return loopbackHosts(n)
	}
	hostCleanup(8) // what a killed earlier run left
	t.Cleanup(func() { hostCleanup(n) })
	netnsRun(t, "ip", "link", "add", hostBridge, "type", "bridge")
	netnsRun(t, "ip", "addr", "add", hostNet+"254/24", "dev", hostBridge)
	netnsRun(t, "ip", "link", "set", hostBridge, "up")
	hs := make([]nodeHost, n)
	for i := range hs {
		hs[i] = nodeHost{ns: fmt.Sprintf("rlr%d", i), ip: fmt.Sprintf("%s%d", hostNet, i+1)}
		veth, port := fmt.Sprintf("rlrv%d", i), fmt.Sprintf("rlrp%d", i)
		netnsRun(t, "ip", "netns", "add", hs[i].ns)
		netnsRun(t, "ip", "link", "add", "name", veth, "netns", hs[i].ns, "type", "veth", "peer", "name", port)
		netnsRun(t, "ip", "link", "set", port, "master", hostBridge, "up")
		netnsRun(t, "ip", "-n", hs[i].ns, "addr", "add", hs[i].ip+"/24", "dev", veth)
		netnsRun(t, "ip", "-n", hs[i].ns, "link", "set", veth, "up")
		netnsRun(t, "ip", "-n", hs[i].ns, "link", "set", "lo", "up")
	}
	t.Logf("nodes in network namespaces rlr0-rlr%d on %s0/24", n-1, hostNet)
	return hs
}

// hostCleanup removes the namespaces rlr0 to rlr<n-1>, their links and the bridge.
func hostCleanup(n int) {
	for i := range n {
		_ = exec.Command("ip", "netns", "del", fmt.Sprintf("rlr%d", i)).Run()
		_ = exec.Command("ip", "link", "del", fmt.Sprintf("rlrp%d", i)).Run() // gone with its namespace, unless a process kept that alive
	}
	_ = exec.Command("ip", "link", "del", hostBridge).Run()
}

// flags returns what every node on h gets besides its own flags: off
// loopback, its address for clients, and what a node there needs to start
// (a cluster key; no protected mode, since the tests' clients send no
// password).
func (h nodeHost) flags() []string {
	if h.ns == "" {
		return nil
	}
	return []string{"--bind", h.ip, "--protected-mode", "no", "--cluster-key", hostKey}
}

// fixedPort returns a port on h that stays h's while a node restarts:
// port itself in a namespace, which only the node uses, and on loopback
// one free a moment ago below the ephemeral range (testport.Stable).
func (h nodeHost) fixedPort(t *testing.T, port int) string {
	t.Helper()
	if h.ns == "" {
		return testport.Stable(t)
	}
	return strconv.Itoa(port)
}

// fixedAddr is fixedPort's host:port.
func (h nodeHost) fixedAddr(t *testing.T, port int) string {
	t.Helper()
	return h.ip + ":" + h.fixedPort(t, port)
}

// start starts rlstore with args on h (with `ip netns exec` in a
// namespace), as startProc does, and checks that it runs there.
func (h nodeHost) start(t *testing.T, args ...string) *proc {
	t.Helper()
	if h.ns == "" {
		return startProc(t, nil, args...)
	}
	p := rlstoretest.Start(t, "ip", nil, append([]string{"netns", "exec", h.ns, rlstoreBin}, args...)...)
	h.check(t, p)
	return p
}

// check verifies that p, started by `ip netns exec`, is rlstore itself in
// h's namespace, listening on h's address: ip execs the command in place
// (iproute2 forks only with -b), so the pid the test signals (SIGSTOP,
// SIGKILL, SIGTERM) and waits on is rlstore's, not a parent's that would
// take the signal itself; and a restart is in the same namespace.
func (h nodeHost) check(t *testing.T, p *proc) {
	t.Helper()
	addr := p.Addr(t) // ip has exec'd rlstore by the time it logs
	require.True(t, strings.HasPrefix(addr, h.ip+":"), "%s listens on %s's address, not %s", h.ns, h.ip, addr)
	pid := p.Cmd.Process.Pid
	self, err := os.Executable()
	require.NoError(t, err)
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	require.NoError(t, err)
	require.Equal(t, self, exe, "pid %d is rlstore (this test binary), which ip netns exec became", pid)
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat("/run/netns/"+h.ns, &st))
	netns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", pid))
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("net:[%d]", st.Ino), netns, "pid %d runs in %s", pid, h.ns)
}

// startClusterProcOn is startClusterProc on h.
func startClusterProcOn(t *testing.T, h nodeHost, name string, seed string, extra ...string) *clusterProc {
	t.Helper()
	args := append(h.flags(), "--port", "0", "--node-name", name, "--cluster-addr", h.ip+":0", "--cluster-timing", "fast")
	if seed != "" {
		args = append(args, "--join", seed)
	}
	p := h.start(t, append(args, extra...)...)
	gossip := p.WaitLog(t, gossipLine)[1]
	return &clusterProc{proc: p, name: name, addr: p.Addr(t), gossip: gossip}
}

// startClusterProcsOn is startClusterProcs with node i on hs[i].
func startClusterProcsOn(t *testing.T, hs []nodeHost, extra ...string) []*clusterProc {
	t.Helper()
	ps := []*clusterProc{startClusterProcOn(t, hs[0], "p0", "", extra...)}
	for i := 1; i < len(hs); i++ {
		ps = append(ps, startClusterProcOn(t, hs[i], fmt.Sprint("p", i), ps[0].gossip, extra...))
		waitFormed(t, ps...)
	}
	waitFormed(t, ps...)
	return ps
}
