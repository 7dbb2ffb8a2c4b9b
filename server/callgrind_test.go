package server

import (
	"os"
	"strconv"
	"testing"

	"github.com/rlstore/rlstore/server/internal/resp"
)

// TestCallgrindBatch is a harness for counting the instructions of the
// decision path with callgrind, which a noisy host does not move: it makes
// CG_KEYS keys as rlload names them (RL.SLIDE key 100 60), then runs CG_N
// batches of 16 pipelined decisions on random ones through cgLoop, parse
// to reply, the one function to collect:
//
//	go test -c -o /tmp/server.test ./server/
//	CG_KEYS=100000 CG_N=2000 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	  --toggle-collect='*cgLoop*' /tmp/server.test -test.run TestCallgrindBatch -test.cpu 1
//
// Instructions per decision are the total over CG_N*16. (Go's asynchronous
// preemption signals crash callgrind, hence GODEBUG.)
func TestCallgrindBatch(t *testing.T) {
	if os.Getenv("CG_N") == "" {
		t.Skip("a harness for callgrind: set CG_KEYS and CG_N")
	}
	keys, _ := strconv.Atoi(os.Getenv("CG_KEYS"))
	n, _ := strconv.Atoi(os.Getenv("CG_N"))
	s := newTestServer(t, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	batches := cgBatches(keys, 256)
	for k := range keys {
		runBatch(s, c, rc, []byte(respCmd("RL.SLIDE", cgKey(k), "100", "60")))
	}
	cgLoop(s, c, rc, batches, n)
}

// cgLoop runs n of batches through the connection's path.
//
//go:noinline
func cgLoop(s *Server, c *client, rc *resp.Conn, batches [][]byte, n int) {
	for i := range n {
		runBatch(s, c, rc, batches[i%len(batches)])
	}
}

// cgKey names key k as rlload does.
func cgKey(k int) string { return "lt:8ij7sf:" + strconv.Itoa(k) }

// cgBatches returns n batches of 16 RL.SLIDE requests on keys drawn from
// keys by a fixed sequence, so that every run decides the same ones.
func cgBatches(keys, n int) [][]byte {
	out := make([][]byte, n)
	x := uint64(12345)
	for i := range out {
		var b []byte
		for range 16 {
			x = x*6364136223846793005 + 1442695040888963407
			b = append(b, respCmd("RL.SLIDE", cgKey(int((x>>33)%uint64(keys))), "100", "60")...)
		}
		out[i] = b
	}
	return out
}
