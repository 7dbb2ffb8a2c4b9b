package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/stretchr/testify/require"
)

// testNode is one node of an in-process cluster on loopback.
type testNode struct {
	name   string
	addr   string // RESP
	srv    *Server
	ml     *cluster.Membership
	peers  *cluster.Peers
	store  *shard.Map     // the node's keys
	copies *shard.Map     // with replicas
	ship   *cluster.Peers // with replicas: the shipments' connections
}

type clusterOpts struct {
	secret   []byte
	redirect bool
	policy   Unreachable
	replicas bool // ship to each slot's runner-up every 10ms
	// wrap, if set, stands between the node and its peers (to hold a forward back, say).
	wrap       func(cluster.Forwarder) cluster.Forwarder
	wrapMover  func(cluster.Forwarder) cluster.Forwarder // the same for the handoff's connections
	wrapShip   func(cluster.Forwarder) cluster.Forwarder // the same for the replicas' shipments
	maxRequest int64                                     // Config.MaxRequestBytes; 0 for the default
	config     func(*Config)                             // if set, changes each node's Config last
	extra      func(*Server) []core.Command              // test-only entries each node's table gets
}

// startTestCluster starts n nodes joined through the first, one at a
// time, and waits until every node sees n owners and no slot is moving.
func startTestCluster(t *testing.T, n int, o clusterOpts) []*testNode {
	t.Helper()
	var nodes []*testNode
	for i := range n {
		var seeds []string
		if i > 0 {
			seeds = []string{nodes[0].ml.GossipAddr()}
		}
		nodes = append(nodes, startTestNode(t, fmt.Sprint("node", i), seeds, o))
		waitOwners(t, nodes, i+1) // one join at a time, each handed off before the next
		waitSettled(t, nodes)
	}
	return nodes
}

// waitSettled waits until no node is moving a slot in or out, and every
// migration has ended: a cut marks its slots moved before it counts them
// in the handoff's stats, which a test may read next.
func waitSettled(t testing.TB, nodes []*testNode) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			n.srv.ClusterChanged()
			if in, out := n.srv.ho.Moving(); in+out > 0 || n.srv.ho.Stats().Moves > 0 {
				return false
			}
		}
		return true
	}, deadline, 10*time.Millisecond, "every handoff ends")
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if cn := n.srv; !cn.ho.Serving() || cn.ho.Takeover().Waiting(cn.ho.Lease().Now()) > 0 {
				return false
			}
		}
		return true
	}, deadline, 10*time.Millisecond, "every node holds its lease and serves every slot it owns")
}

// patientTiming is cluster.TestTiming with probes slow enough that a
// loaded host does not declare a live node dead. Under -race, with CI
// testing every package at once on two cores, an ack can take longer than
// TestTiming's 100 ms and a refutation longer than its 400 ms of
// suspicion; the membership then flaps, slots move back and forth, and
// tests of the handoff and of replicas fail for reasons that are not
// theirs. A death is seen in about 3 s instead of 1.
func patientTiming() cluster.Timing {
	t := cluster.TestTiming()
	t.Probe, t.ProbeTimeout = 500*time.Millisecond, 400*time.Millisecond
	t.Suspicion, t.SuspicionMax = 4, 4
	t.Lease = 2 * time.Second // grants can wait that long on a loaded host too
	return t
}

func startTestNode(t *testing.T, name string, seeds []string, o clusterOpts) *testNode {
	t.Helper()
	if o.secret == nil {
		o.secret = []byte("test-secret") // a cluster always has one
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("RL_TEST_LOG") != "" {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, nil)).With("node", name)
	}
	scfg := Config{Listener: ln, Logger: quiet, Store: mustStore(t), MaxRequestBytes: o.maxRequest,
		Cluster: &ClusterConfig{Secret: o.secret, Redirect: o.redirect, OwnerUnreachable: o.policy}}
	tn := &testNode{name: name}
	if o.replicas {
		scfg.Store, tn.copies = mustStore(t), mustStore(t)
		scfg.Cluster.Replicas = &ReplicaConfig{Feed: persistence.NewFeed(scfg.Store), Copies: tn.copies, Interval: 10 * time.Millisecond}
	}
	tn.store = scfg.Store
	if o.config != nil {
		o.config(&scfg)
	}
	wraps := map[Pool]func(cluster.Forwarder) cluster.Forwarder{PoolForward: o.wrap, PoolMover: o.wrapMover, PoolShip: o.wrapShip}
	n, err := NewNode(NodeConfig{
		Server: scfg,
		Gossip: cluster.Config{NodeName: name, BindAddr: "127.0.0.1:0", RESPAddr: ln.Addr().String(),
			Seeds: seeds, Timing: patientTiming(), Logger: quiet},
		Peers:        cluster.PeersConfig{Name: name, Secret: o.secret, Timeout: 500 * time.Millisecond},
		MoverTimeout: 2 * time.Second,
		Wrap: func(p Pool, f cluster.Forwarder) cluster.Forwarder {
			if w := wraps[p]; w != nil {
				return w(f)
			}
			return f
		},
	})
	require.NoError(t, err)
	if o.extra != nil {
		n.Server.registerSpecified(o.extra(n.Server)) // each node its own entries
	}
	tn.srv, tn.ml, tn.peers, tn.ship = n.Server, n.Membership, n.Peers, n.Ship
	tn.addr = serveTest(t, n.Server)
	t.Cleanup(func() { _ = n.Close(0) }) // before the server's Close, which serveTest's cleanup runs
	return tn
}

func waitOwners(t testing.TB, nodes []*testNode, want int) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, n := range nodes {
			if len(n.ml.View().Table.Nodes()) != want {
				return false
			}
		}
		return true
	}, deadline, 10*time.Millisecond, "every node sees %d owners", want)
}

// ownerOf returns the node that owns key, as node 0 sees it.
func ownerOf(nodes []*testNode, key string) *testNode {
	name := nodes[0].ml.View().Table.Owner(cluster.Slot([]byte(key))).Name
	for _, n := range nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

func newClusterClient(t *testing.T, nodes []*testNode) *redis.ClusterClient {
	t.Helper()
	var addrs []string
	for _, n := range nodes {
		addrs = append(addrs, n.addr)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, MaxRedirects: 0})
	t.Cleanup(func() { _ = cc.Close() })
	require.NoError(t, cc.Ping(context.Background()).Err())
	return cc
}
