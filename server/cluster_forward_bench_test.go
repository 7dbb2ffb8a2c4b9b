package server

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/require"
)

// BenchmarkForwardPipeline measures forwarding: a client pipelines
// batches of 16 RL.SLIDE to one node of two, over real loopback sockets,
// and the other node owns the keys of all (remote) or of about half
// (mixed), or none (local). 8 clients run at once, so that batches from
// several share node-to-node writes as under load. ns/op, cpu-ns/op (the
// process's CPU time, which a busy host disturbs less than the wall time)
// and allocs/op are per command, both nodes and the clients counted.
func BenchmarkForwardPipeline(b *testing.B) {
	for _, bc := range []struct {
		name   string
		remote int // of every 16 commands, how many go to the other node
	}{{"remote", 16}, {"mixed", 8}, {"local", 0}} {
		b.Run(bc.name, func(b *testing.B) { benchForward(b, bc.remote) })
	}
}

func benchForward(b *testing.B, remote int) {
	const batch = 16
	nodes := startBenchCluster(b)
	mine, theirs := keysByOwner(nodes, 64)
	var reqs []string
	for round := range 64 {
		var sb strings.Builder
		for i := range batch {
			key := mine[(round+i)%len(mine)]
			if i < remote {
				key = theirs[(round+i)%len(theirs)]
			}
			sb.WriteString(respCmd("RL.SLIDE", key, "1000000000", "60"))
		}
		reqs = append(reqs, sb.String())
	}
	b.SetParallelism(4)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	defer func() { b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op") }()
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("tcp", nodes[0].addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		r := bufio.NewReaderSize(conn, 64<<10)
		for i := 0; ; i++ {
			for range batch - 1 { // one batch is batch operations
				if !pb.Next() {
					return
				}
			}
			if !pb.Next() {
				return
			}
			if _, err := io.WriteString(conn, reqs[i%len(reqs)]); err != nil {
				b.Error(err)
				return
			}
			for range batch {
				if err := skipReply(r); err != nil {
					b.Error(err)
					return
				}
			}
		}
	})
}

// keysByOwner returns n keys node 0 owns and n that node 1 owns.
func keysByOwner(nodes []*testNode, n int) (mine, theirs []string) {
	t := nodes[0].ml.View().Table
	for i := 0; len(mine) < n || len(theirs) < n; i++ {
		k := fmt.Sprint("bench:", i)
		switch owner := t.Owner(cluster.Slot([]byte(k))).Name; {
		case owner == nodes[0].name && len(mine) < n:
			mine = append(mine, k)
		case owner != nodes[0].name && len(theirs) < n:
			theirs = append(theirs, k)
		}
	}
	return mine, theirs
}

// skipReply reads one RESP2 reply of integers and arrays of them.
func skipReply(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	switch line[0] {
	case '*':
		n := 0
		for _, c := range line[1 : len(line)-2] {
			n = n*10 + int(c-'0')
		}
		for range n {
			if err := skipReply(r); err != nil {
				return err
			}
		}
	case '-':
		return fmt.Errorf("error reply: %s", line)
	}
	return nil
}

// startBenchCluster starts two nodes in this process, like
// startTestCluster, for a benchmark.
func startBenchCluster(tb testing.TB) []*testNode {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var nodes []*testNode
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(tb, err)
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].ml.GossipAddr()}
		}
		name := fmt.Sprint("node", i)
		n, err := NewNode(NodeConfig{
			Server: Config{Listener: ln, Logger: quiet, Store: mustStore(tb), Cluster: &ClusterConfig{Secret: []byte("bench")}},
			Gossip: cluster.Config{NodeName: name, BindAddr: "127.0.0.1:0", RESPAddr: ln.Addr().String(),
				Seeds: seeds, Timing: cluster.TestTiming(), Logger: quiet},
			Peers: cluster.PeersConfig{Name: name, Secret: []byte("bench")},
		})
		require.NoError(tb, err)
		nodes = append(nodes, &testNode{name: name, addr: serveTest(tb, n.Server), srv: n.Server, ml: n.Membership, peers: n.Peers})
		tb.Cleanup(func() { _ = n.Close(0) })
	}
	waitOwners(tb, nodes, 2)
	waitSettled(tb, nodes)
	return nodes
}

// processCPU returns the CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
