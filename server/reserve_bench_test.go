package server

import (
	"strconv"
	"testing"
)

// BenchmarkReservePairs runs RL.RESERVE + RL.COMMIT pairs through the
// server's own path, 8 pairs to a batch (one op) as a client at -P 16 sends them,
// over 1000 FIXED keys with 4 reservations outstanding on each: small
// estimates (tokens) and large ones (upload bytes, above 2^20).
func BenchmarkReservePairs(b *testing.B) {
	for _, est := range []int{600, 5_000_000} {
		b.Run("estimate="+strconv.Itoa(est), func(b *testing.B) { reservePairs(b, est) })
	}
}

func reservePairs(b *testing.B, est int) {
	s := newTestServer(b, Config{})
	rc := newBenchConn()
	c := benchClient(s, rc)
	rule := []string{"FIXED", "1000000000000", "1h"}
	reserve := func(key, id string, ttl string) string {
		args := append([]string{"RL.RESERVE", key}, rule...)
		return respCmd(append(args, "COST", strconv.Itoa(est), "TTL", ttl, "ID", id)...)
	}
	for k := range 1000 {
		for h := range 4 {
			runBatch(s, c, rc, []byte(reserve(benchKey(k), "held"+strconv.Itoa(h), "1h")))
		}
	}
	var batches [][]byte
	for n := range 256 {
		var batch string
		for p := range 8 {
			key, id := benchKey((n*8+p)*7919%1000), "r"+strconv.Itoa(p)
			batch += reserve(key, id, "30s") + respCmd("RL.COMMIT", key, id, "ACTUAL", strconv.Itoa(est/2))
		}
		batches = append(batches, []byte(batch))
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		runBatch(s, c, rc, batches[n%len(batches)])
		n++
	}
}
