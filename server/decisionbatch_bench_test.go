package server

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/resp"
)

// BenchmarkDecisionBatch runs pipelined RL.SLIDE commands through the
// server's own path, parse to reply, 16 to a batch as a client at -P 16
// sends them, on keys drawn uniformly from a keyspace: everything a
// decision costs the server but the socket. Besides ns/op it reports
// cpu-ns/op, the benchmark thread's own CPU time, which other load on a
// shared host moves far less than wall time.
func BenchmarkDecisionBatch(b *testing.B) {
	for _, keys := range []int{1000, 100_000, 1_000_000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			s := newTestServer(b, Config{})
			rc := newBenchConn()
			c := benchClient(s, rc)
			batches := decisionBatches(keys, 2048)
			for k := range keys { // every key exists: measure decisions, not insertions
				runBatch(s, c, rc, []byte(respCmd("RL.SLIDE", benchKey(k), "1000000000", "60")))
			}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			b.ReportAllocs()
			cpu := threadCPU()
			n := 0
			for b.Loop() {
				runBatch(s, c, rc, batches[n%len(batches)])
				n++
			}
			b.ReportMetric(float64(threadCPU()-cpu)/float64(16*n), "cpu-ns/decision")
			b.ReportMetric(float64(b.Elapsed())/float64(16*n), "ns/decision")
		})
	}
}

// runBatch parses and runs every command of batch as the connection's loop
// does, and drops the replies.
func runBatch(s *Server, c *client, rc *resp.Conn, batch []byte) {
	rc.Feed(batch)
	s.dec.Prefetch(&c.dec, c.Conn) // as the connection's loop does once a batch is read
	for {
		args, err := rc.Command()
		if err != nil {
			panic(err)
		}
		if args == nil {
			break
		}
		c.Ahead = c.dec.AheadCommand(rc)
		s.handle(c, args)
	}
	s.flushPending(c)
	c.Mark = 0
	rc.Discard()
}

// decisionBatches returns n batches of 16 RL.SLIDE commands on random keys of keys.
func decisionBatches(keys, n int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		var b []byte
		for range 16 {
			b = append(b, respCmd("RL.SLIDE", benchKey(rng.IntN(keys)), "1000000000", "60")...)
		}
		out[i] = b
	}
	return out
}

// benchKey names key k as rlload does.
func benchKey(k int) string { return "rlload:" + strconv.Itoa(1_000_000+k) + ":api" }

// threadCPU returns the CPU time the calling OS thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
