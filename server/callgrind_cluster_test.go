package server

import (
	"context"
	"os"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestCallgrindClusterBatch is TestCallgrindBatch on the first node of a
// cluster of three (with replicas if CG_REPLICAS is set), so that the count
// includes what a cluster adds to a decision on an owned slot (the slot's
// owner and lease, the nudge; the replicas' feed): the keys are only those
// the node owns, so none is forwarded.
//
//	go test -c -o /tmp/server.test ./server/
//	CG_KEYS=10000 CG_N=1000 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOGC=off \
//	  valgrind --tool=callgrind --toggle-collect='*cgLoop*' \
//	  /tmp/server.test -test.run TestCallgrindClusterBatch -test.cpu 1
//
// (cpu.rdtscp=off: valgrind cannot run RDTSCP, which the runtime's lock
// uses when it has to wait.) The cluster's goroutines (gossip, the lease,
// sweeps) now and then run on the measured thread inside cgLoop, which
// adds to the total or cuts the collection short; compare the decision
// path's functions with callgrind_annotate, from runs whose parser counts
// are exact multiples of the requests (docs/cluster.md, "Cost").
func TestCallgrindClusterBatch(t *testing.T) {
	if os.Getenv("CG_N") == "" {
		t.Skip("a harness for callgrind: set CG_KEYS and CG_N")
	}
	keys, _ := strconv.Atoi(os.Getenv("CG_KEYS"))
	n, _ := strconv.Atoi(os.Getenv("CG_N"))
	nodes := startTestCluster(t, 3, clusterOpts{replicas: os.Getenv("CG_REPLICAS") != ""})
	s := nodes[0].srv
	var own []string
	for k := 0; len(own) < keys; k++ {
		if key := cgKey(k); ownerOf(nodes, key) == nodes[0] {
			own = append(own, key)
		}
	}
	rc := newBenchConn()
	c := benchClient(s, rc)
	db := redis.NewClient(&redis.Options{Addr: nodes[0].addr})
	defer db.Close()
	// Under valgrind the lease's goroutines run slowly, and a warm-up
	// request now and then meets a lapse (CLUSTERDOWN): warm up again.
	var size int64
	for try := 0; try < 5 && size < int64(keys); try++ {
		for _, key := range own {
			runBatch(s, c, rc, []byte(respCmd("RL.SLIDE", key, "100", "60")))
		}
		var err error
		size, err = db.DBSize(context.Background()).Result()
		require.NoError(t, err)
	}
	batches := make([][]byte, 256)
	x := uint64(12345)
	for i := range batches {
		var b []byte
		for range 16 {
			x = x*6364136223846793005 + 1442695040888963407
			b = append(b, respCmd("RL.SLIDE", own[(x>>33)%uint64(len(own))], "100", "60")...)
		}
		batches[i] = b
	}
	require.GreaterOrEqual(t, size, int64(keys), "every key decided on the node, none forwarded or refused")
	cgLoop(s, c, rc, batches, n)
}
