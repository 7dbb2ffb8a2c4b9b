package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rlstore/rlstore/cluster"
)

// The cluster test's configuration: "user" descriptors are filled past
// their limit, "counter" descriptors count every call.
const (
	gwUserLimit    = 5
	gwCounterLimit = 1_000_000
	gwClusterYAML  = `domain: api
descriptors:
  - key: user
    rate_limit: {unit: hour, requests_per_unit: 5}
  - key: counter
    rate_limit: {unit: hour, requests_per_unit: 1000000}
`
)

// gwNode is one process of the cluster with its gRPC client.
type gwNode struct {
	*clusterProc
	rls pb.RateLimitServiceClient
}

// gwDesc is a descriptor of the test's domain, and its store key (which
// decides its owner).
func gwDesc(key, value string) (*pbstruct.RateLimitDescriptor, string) {
	d := &pbstruct.RateLimitDescriptor{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: key, Value: value}}}
	return d, "rls:api:" + key + "=" + value + "|c3600"
}

// startGatewayCluster starts three processes with --grpc-port and the
// test's configuration, in one cluster with --replicas 1.
func startGatewayCluster(t *testing.T) []*gwNode {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(gwClusterYAML), 0o644))
	// lan timing: a test host loaded by -race must not see false deaths.
	ps := startClusterProcs(t, 3, "--cluster-timing", "lan", "--grpc-port", "0", "--rls-config", dir, "--replicas", "1",
		"--replica-interval", replicaIv.String())
	var nodes []*gwNode
	for _, p := range ps {
		addr := p.WaitLog(t, grpcLine)[1]
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		nodes = append(nodes, &gwNode{clusterProc: p, rls: pb.NewRateLimitServiceClient(conn)})
	}
	return nodes
}

// gwCall is one ShouldRateLimit call of Envoy's: up to three descriptors.
type gwCall struct {
	descs []*pbstruct.RateLimitDescriptor
	names []string // the descriptors' values, for counting
}

// gwCalls groups the descriptors key=values[i] into calls of three.
func gwCalls(key string, values []string) []gwCall {
	var calls []gwCall
	for i := 0; i < len(values); i += 3 {
		var c gwCall
		for _, v := range values[i:min(i+3, len(values))] {
			d, _ := gwDesc(key, v)
			c.descs, c.names = append(c.descs, d), append(c.names, v)
		}
		calls = append(calls, c)
	}
	return calls
}

// gwCallsByOwner is gwCalls with each call's descriptors of one owner, so
// that a call failing for an unreachable owner has counted nothing
// elsewhere.
func gwCallsByOwner(t *testing.T, key string, values []string) []gwCall {
	tb := procTable(t, 3)
	by := map[string][]string{}
	for _, v := range values {
		_, k := gwDesc(key, v)
		o := tb.Owner(cluster.Slot([]byte(k))).Name
		by[o] = append(by[o], v)
	}
	var calls []gwCall
	for _, o := range []string{"p0", "p1", "p2"} {
		calls = append(calls, gwCalls(key, by[o])...)
	}
	return calls
}

// gwValues returns n values prefix0, prefix1, ..., and which of them p1 owns.
func gwValues(t *testing.T, key, prefix string, n int) (all, ofP1 []string) {
	tb := procTable(t, 3)
	for i := range n {
		v := prefix + strconv.Itoa(i)
		_, k := gwDesc(key, v)
		all = append(all, v)
		if tb.Owner(cluster.Slot([]byte(k))).Name == "p1" {
			ofP1 = append(ofP1, v)
		}
	}
	require.NotEmpty(t, ofP1)
	require.Less(t, len(ofP1), n)
	return all, ofP1
}

// TestProcessGatewayCluster: three processes, each with --grpc-port, in a
// cluster with --replicas 1. Envoy-style ShouldRateLimit calls, three
// descriptors each, spread over every node concurrently, give each
// descriptor one limit: exactly its requests_per_unit are OK, with the
// distinct remainders of one counter. Then, under steady calls, kill -9 of
// a node: every descriptor past its limit stays limited through the
// failover (none is OK again), and a counting descriptor of the dead node
// loses at most about one --replica-interval of its hits (the cluster's
// documented bound, docs/replicas.md).
func TestProcessGatewayCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("3-node kill -9 under gRPC load: not in -short")
	}
	nodes := startGatewayCluster(t)
	users, usersP1 := gwValues(t, "user", "u", 60)
	oneLimitAcrossNodes(t, nodes, users)

	counters, countersP1 := gwValues(t, "counter", "c", 30)
	ld := &gwLoad{users: gwCalls("user", users), counters: gwCallsByOwner(t, "counter", counters), seen: map[string]int64{}}
	ld.live.Store(&nodes)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() { defer close(done); ld.run(stop) }()
	require.Eventually(t, func() bool { return ld.roundsDone() >= 10 }, deadline, 10*time.Millisecond)
	waitCopies(t, len(users)+len(counters), nodes[0].clusterProc, nodes[1].clusterProc, nodes[2].clusterProc)
	time.Sleep(3 * replicaIv) // the load runs for a few intervals: not an ordering, a duration of the scenario

	survivors := []*gwNode{nodes[0], nodes[2]}
	ld.live.Store(&survivors) // as Envoy drops the endpoint: calls go to p0 and p2 only
	killing := time.Now()
	nodes[1].Kill()
	killed := time.Now()
	detected := waitDeath(t, nodes[0].clusterProc, nodes[2].clusterProc)
	answered := waitGatewayAnswers(t, nodes[0], usersP1, countersP1)
	rounds := ld.roundsDone()
	require.Eventually(t, func() bool { return ld.roundsDone() >= rounds+5 }, deadline, 10*time.Millisecond)
	close(stop)
	<-done

	ld.mu.Lock()
	defer ld.mu.Unlock()
	bound := ld.ends.lossBound(killing, killed)
	var maxLost, sumLost int64
	for _, v := range countersP1 {
		lost := ld.seen[v] - gwCount(t, nodes[2], "counter", v)
		maxLost, sumLost = max(maxLost, lost), sumLost+lost
	}
	t.Logf("death detected %v after kill -9; p1's descriptors answered %v after detection; %d calls failed meanwhile",
		detected.Sub(killed).Round(time.Millisecond), answered.Sub(detected).Round(time.Millisecond), ld.failed)
	t.Logf("p1's counting descriptors: %d rounds, %d of them in the %v before the kill; lost hits per descriptor: max %d (bound %d), mean %.1f",
		ld.rounds, bound-1, lossWindow, maxLost, bound, float64(sumLost)/float64(len(countersP1)))
	assert.Zero(t, ld.usersOK, "no descriptor past its limit is OK again, through the kill -9 of an owner")
	for _, v := range users {
		_, code := gwCheck(t, nodes[0], "user", v)
		assert.Equal(t, pb.RateLimitResponse_OVER_LIMIT, code, "user=%s stays over its limit", v)
	}
	assert.LessOrEqual(t, maxLost, int64(bound), "a descriptor loses at most about an interval of hits")
}

// oneLimitAcrossNodes sends each user 2×limit hits in calls of three
// descriptors, spread over the nodes concurrently, and checks that each
// got exactly its limit, with the remainders limit-1 … 0 of one counter.
func oneLimitAcrossNodes(t *testing.T, nodes []*gwNode, users []string) {
	t.Helper()
	var mu sync.Mutex
	remaining := map[string][]int{}
	calls := gwCalls("user", users)
	for round := range 2 * gwUserLimit {
		inParallel(len(nodes), len(calls), func(i int) {
			n := nodes[(round+i)%len(nodes)]
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			resp, err := n.rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: calls[i].descs})
			if !assert.NoError(t, err, "via %s", n.name) {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for j, st := range resp.Statuses {
				if st.Code == pb.RateLimitResponse_OK {
					remaining[calls[i].names[j]] = append(remaining[calls[i].names[j]], int(st.LimitRemaining))
				}
			}
		})
	}
	for _, u := range users {
		assert.ElementsMatch(t, []int{4, 3, 2, 1, 0}, remaining[u], "user=%s: its OK answers, from every node", u)
	}
}

// inParallel runs f(0) … f(n-1) on w goroutines, as w gateways would.
func inParallel(w, n int, f func(i int)) {
	var wg sync.WaitGroup
	for g := range w {
		wg.Go(func() {
			for i := g; i < n; i += w {
				f(i)
			}
		})
	}
	wg.Wait()
}

// gwLoad sends rounds of calls for every user and counter, spread over the
// live nodes, and counts what the answers say.
type gwLoad struct {
	users, counters []gwCall
	live            atomic.Pointer[[]*gwNode] // the nodes that take calls

	mu      sync.Mutex // guards the fields below
	rounds  int
	ends    roundEnds
	seen    map[string]int64 // per counter, the hits of the calls answered
	usersOK int              // OK answers for users (all past their limit)
	failed  int              // calls that failed
}

func (l *gwLoad) run(stop <-chan struct{}) {
	calls := append(append([]gwCall(nil), l.users...), l.counters...)
	for round := 0; ; round++ {
		select {
		case <-stop:
			return
		default:
		}
		inParallel(3, len(calls), func(i int) { l.call(round+i, calls[i]) })
		l.mu.Lock()
		l.rounds++
		l.ends = append(l.ends, time.Now())
		l.mu.Unlock()
	}
}

func (l *gwLoad) call(i int, c gwCall) {
	live := *l.live.Load()
	n := live[i%len(live)]
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	resp, err := n.rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: c.descs})
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.failed++
		return
	}
	for j, st := range resp.Statuses {
		switch {
		case st.CurrentLimit.GetRequestsPerUnit() == gwCounterLimit:
			l.seen[c.names[j]]++
		case st.Code == pb.RateLimitResponse_OK:
			l.usersOK++
		}
	}
}

func (l *gwLoad) roundsDone() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rounds
}

// waitGatewayAnswers returns when one check-only call through n first
// answers for every descriptor p1 owned.
func waitGatewayAnswers(t *testing.T, n *gwNode, users, counters []string) time.Time {
	t.Helper()
	req := &pb.RateLimitRequest{Domain: "api"}
	for _, v := range users {
		d, _ := gwDesc("user", v)
		d.HitsAddend = wrapperspb.UInt64(0)
		req.Descriptors = append(req.Descriptors, d)
	}
	for _, v := range counters {
		d, _ := gwDesc("counter", v)
		d.HitsAddend = wrapperspb.UInt64(0)
		req.Descriptors = append(req.Descriptors, d)
	}
	var at time.Time
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		_, err := n.rls.ShouldRateLimit(ctx, req)
		at = time.Now()
		return err == nil
	}, deadline, 2*time.Millisecond, "the new owners answer for the dead owner's descriptors")
	return at
}

// gwCheck asks key=value's state without counting (hits_addend 0).
func gwCheck(t *testing.T, n *gwNode, key, value string) (uint32, pb.RateLimitResponse_Code) {
	t.Helper()
	d, _ := gwDesc(key, value)
	d.HitsAddend = wrapperspb.UInt64(0)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	resp, err := n.rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{d}})
	require.NoError(t, err)
	return resp.Statuses[0].LimitRemaining, resp.OverallCode
}

// gwCount is a counting descriptor's hits in its window.
func gwCount(t *testing.T, n *gwNode, key, value string) int64 {
	t.Helper()
	rem, _ := gwCheck(t, n, key, value)
	return int64(gwCounterLimit) - int64(rem)
}
