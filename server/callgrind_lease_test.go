package server

import (
	"os"
	"strconv"
	"testing"
)

// TestCallgrindLeasePairs is TestCallgrindBatch for loadtest/cmd/leasepairs'
// workloads: CG_N batches of 8 pairs on 10000 keys, as leasepairs sends
// them, through cgLoop, of CG_MODE: native (RL.ACQUIRE key 100 30s ID id +
// RL.RELEASE key id), reserve (RL.RESERVE … TOKEN + RL.COMMIT) or ping (two
// PING, the floor every command pays):
//
//	go test -c -o /tmp/server.test ./server/
//	CG_MODE=native CG_N=2000 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off GOGC=off valgrind --tool=callgrind \
//	  --toggle-collect='*cgLoop*' /tmp/server.test -test.run TestCallgrindLeasePairs -test.cpu 1
//
// Instructions per pair are the total over CG_N*8.
func TestCallgrindLeasePairs(t *testing.T) {
	if os.Getenv("CG_N") == "" || os.Getenv("CG_MODE") == "" {
		t.Skip("a harness for callgrind: set CG_MODE and CG_N")
	}
	n, _ := strconv.Atoi(os.Getenv("CG_N"))
	s := newTestServer(t, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	batches := cgPairBatches(os.Getenv("CG_MODE"), 256)
	for i := range 2 * len(batches) { // warm: every key made once, the buffers grown
		runBatch(s, c, rc, batches[i%len(batches)])
	}
	cgLoop(s, c, rc, batches, n)
}

// cgPairBatches returns n batches of 8 pairs of mode on 10000 keys, each
// pair with an id of its own, as leasepairs makes them.
func cgPairBatches(mode string, n int) [][]byte {
	out := make([][]byte, n)
	x := uint64(12345)
	for i := range out {
		var b []byte
		for j := range 8 {
			x = x*6364136223846793005 + 1442695040888963407
			key := "lp:" + mode + ":" + strconv.Itoa(int((x>>33)%10000))
			id := strconv.Itoa(i) + "-" + strconv.Itoa(j)
			switch mode {
			case "reserve":
				b = append(b, respCmd("RL.RESERVE", key, "TOKEN", "100000", "100000", "60", "COST", "10", "TTL", "30s", "ID", id)...)
				b = append(b, respCmd("RL.COMMIT", key, id, "ACTUAL", "7")...)
			case "ping":
				b = append(b, respCmd("PING")+respCmd("PING")...)
			default:
				b = append(b, respCmd("RL.ACQUIRE", key, "100", "30s", "ID", id)...)
				b = append(b, respCmd("RL.RELEASE", key, id)...)
			}
		}
		out[i] = b
	}
	return out
}
