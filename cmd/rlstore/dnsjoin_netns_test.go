package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The DNS join test runs three nodes in three network namespaces joined by
// a bridge in a fourth, all named rldp-*, on 10.231.31.0/24. `ip netns exec`
// bind-mounts /etc/netns/NAME/hosts over /etc/hosts for the process it
// starts, which is how each node gets its own view of peers.test.
const (
	dnsNet      = "10.231.31."
	dnsSwitch   = "rldp-sw"
	dnsPeers    = "peers.test"
	dnsPassword = "rldp-test-password"
	dnsKey      = "cmxkcC10ZXN0LWtleS0wMTIzNDU2Nzg5YWJjZGVmMDE=" // 32 bytes
)

// dnsNode is one namespace and the node it runs.
type dnsNode struct {
	ns, ip string
	p      *proc
}

// netnsRun runs a command, failing the test with its output.
func netnsRun(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
}

// netnsCleanup removes every rldp-* namespace and /etc/netns/rldp-* folder
// this test makes (deleting a namespace deletes its veth ends).
func netnsCleanup(n int) {
	for i := range n {
		_ = exec.Command("ip", "netns", "del", fmt.Sprintf("rldp-n%d", i)).Run()
		_ = os.RemoveAll(fmt.Sprintf("/etc/netns/rldp-n%d", i))
	}
	_ = exec.Command("ip", "netns", "del", dnsSwitch).Run()
}

// setupDNSNet makes the switch and n node namespaces, node i at .i+1.
func setupDNSNet(t *testing.T, n int) []*dnsNode {
	t.Helper()
	needNetns(t, "ip")
	netnsCleanup(n) // what a killed earlier run left
	t.Cleanup(func() { netnsCleanup(n) })
	netnsRun(t, "ip", "netns", "add", dnsSwitch)
	netnsRun(t, "ip", "-n", dnsSwitch, "link", "add", "rldp-br", "type", "bridge")
	netnsRun(t, "ip", "-n", dnsSwitch, "link", "set", "rldp-br", "up")
	nodes := make([]*dnsNode, n)
	for i := range nodes {
		ns := fmt.Sprintf("rldp-n%d", i)
		nodes[i] = &dnsNode{ns: ns, ip: fmt.Sprintf("%s%d", dnsNet, i+1)}
		veth, port := fmt.Sprintf("rldp-v%d", i), fmt.Sprintf("rldp-p%d", i)
		netnsRun(t, "ip", "netns", "add", ns)
		netnsRun(t, "ip", "link", "add", "name", veth, "netns", ns, "type", "veth", "peer", "name", port, "netns", dnsSwitch)
		netnsRun(t, "ip", "-n", dnsSwitch, "link", "set", port, "master", "rldp-br", "up")
		netnsRun(t, "ip", "-n", ns, "addr", "add", nodes[i].ip+"/24", "dev", veth)
		netnsRun(t, "ip", "-n", ns, "link", "set", veth, "up")
		netnsRun(t, "ip", "-n", ns, "link", "set", "lo", "up")
		dir := "/etc/netns/" + ns
		require.NoError(t, os.MkdirAll(dir, 0o755))
		// No DNS server: names come from the hosts file only, and
		// memberlist's DNS-over-TCP try fails at once.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "resolv.conf"), []byte("nameserver 127.0.0.1\n"), 0o644))
	}
	return nodes
}

// setPeers makes peers.test resolve, for node, to node's own address first
// and then others': the order a resolver that sorts by RFC 6724 (glibc's
// getaddrinfo) gives on that subnet. The file is rewritten in place: `ip
// netns exec` bind-mounted this inode over the process's /etc/hosts.
func (node *dnsNode) setPeers(t *testing.T, others ...*dnsNode) {
	t.Helper()
	hosts := "127.0.0.1 localhost\n" + node.ip + " " + dnsPeers + "\n"
	for _, o := range others {
		if o != node {
			hosts += o.ip + " " + dnsPeers + "\n"
		}
	}
	require.NoError(t, os.WriteFile(filepath.Join("/etc/netns", node.ns, "hosts"), []byte(hosts), 0o644))
}

func (node *dnsNode) start(t *testing.T, name string) {
	t.Helper()
	args := []string{"netns", "exec", node.ns, rlstoreBin, "--bind", node.ip, "--port", "6379",
		"--node-name", name, "--cluster-addr", node.ip + ":7946", "--join", dnsPeers + ":7946",
		"--cluster-key", dnsKey}
	node.p = rlstoretest.Start(t, "ip", []string{"RLSTORE_REQUIREPASS=" + dnsPassword}, args...)
	node.p.Addr(t)
}

// cli runs redis-cli against node from inside its namespace.
func (node *dnsNode) cli(args ...string) string {
	full := append([]string{"netns", "exec", node.ns, "redis-cli", "-h", node.ip, "-p", "6379",
		"-a", dnsPassword, "--no-auth-warning"}, args...)
	out, err := exec.Command("ip", full...).CombinedOutput()
	if err != nil {
		return err.Error() + ": " + string(out)
	}
	return string(out)
}

// waitMembers waits until every node sees want members, each at the RESP
// address of a node in nodes.
func waitMembers(t *testing.T, nodes []*dnsNode, want int) {
	t.Helper()
	// Eventually runs the condition on its own goroutine, which may still
	// run when it gives up: last is shared, so it is an atomic value.
	var last atomic.Value
	last.Store("")
	ok := assert.Eventually(t, func() bool {
		for _, n := range nodes {
			seen := n.ip + ": " + n.cli("CLUSTER", "NODES")
			last.Store(seen)
			for _, o := range nodes {
				if !strings.Contains(seen, o.ip+":6379") {
					return false
				}
			}
			if strings.Count(strings.TrimSpace(seen), "\n")+1 != want {
				return false
			}
		}
		return true
	}, deadline, 100*time.Millisecond, "every node sees %d members", want)
	if !ok {
		t.Fatalf("last CLUSTER NODES of %s", last.Load())
	}
}

// TestProcessJoinByDNSName: three nodes, each started with --join
// peers.test:7946, at first each see only themselves under that name (their
// own record came first, as in a headless Service while pods start); once
// the name resolves to all three, they form one cluster by the rejoin of
// missing seeds. Then a node restarts with a new address and rejoins.
func TestProcessJoinByDNSName(t *testing.T) {
	nodes := setupDNSNet(t, 3)
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed (apt-get install -y redis-tools)")
	}
	for i, n := range nodes {
		n.setPeers(t)
		n.start(t, fmt.Sprintf("node-%d", i))
	}
	waitMembers(t, nodes[:1], 1)
	for _, n := range nodes {
		n.setPeers(t, nodes...)
	}
	waitMembers(t, nodes, 3)

	// Node 2 stops, its address moves from .3 to .13, and it starts again
	// under its name with peers.test updated, as a restarted pod does.
	last := nodes[2]
	last.p.Signal(t, syscall.SIGTERM)
	last.p.ExitCode(t) // waits for it: what the exit says is the leave's business, not this test's
	netnsRun(t, "ip", "-n", last.ns, "addr", "del", last.ip+"/24", "dev", "rldp-v2")
	last.ip = dnsNet + "13"
	netnsRun(t, "ip", "-n", last.ns, "addr", "add", last.ip+"/24", "dev", "rldp-v2")
	for _, n := range nodes {
		n.setPeers(t, nodes...)
	}
	last.start(t, "node-2")
	waitMembers(t, nodes, 3)
	assert.NotContains(t, nodes[0].cli("CLUSTER", "NODES"), dnsNet+"3:6379", "the old address is gone")
}
