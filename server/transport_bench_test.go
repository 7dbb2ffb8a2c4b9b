package server

import (
	"io"
	"net"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
)

// parseAndReply runs the transport's own work for a batch held in rc's
// buffer: parse every request and write a decision-shaped reply to each.
func parseAndReply(rc *resp.Conn, batch []byte) int {
	rc.Feed(batch)
	rc.Discard()
	n := 0
	for {
		args, err := rc.Command()
		if err != nil || args == nil {
			return n
		}
		rc.WriteArray(5)
		for _, v := range [5]int64{1, 100, 99, 0, 59000} {
			rc.WriteInt64(v)
		}
		n++
	}
}

func newBenchConn() *resp.Conn {
	return resp.NewConn(&resp.Guard{}, DefaultMaxRequestBytes, DefaultClientOutputLimit, nil)
}

// BenchmarkTransportBatch measures parsing 16 pipelined RL.SLIDE requests
// and writing their replies, without the socket: the transport's share of
// a decision at -P 16.
func BenchmarkTransportBatch(b *testing.B) {
	rc := newBenchConn()
	batch := []byte(strings.Repeat(respCmd("RL.SLIDE", "user:0000001:api", "100", "60"), 16))
	parseAndReply(rc, batch) // warm the reply buffer
	b.ReportAllocs()
	b.SetBytes(int64(len(batch)))
	b.ResetTimer()
	for range b.N {
		parseAndReply(rc, batch)
	}
}

// TestTransportBatchAllocs guards the transport's hot path: parsing a batch
// and writing its replies allocate nothing once the buffers are warm.
func TestTransportBatchAllocs(t *testing.T) {
	rc := newBenchConn()
	batch := []byte(strings.Repeat(respCmd("RL.SLIDE", "user:0000001:api", "100", "60"), 16))
	assert.Equal(t, 16, parseAndReply(rc, batch))
	assert.Zero(t, testing.AllocsPerRun(100, func() { parseAndReply(rc, batch) }))
}

// BenchmarkUnpipelined measures a request without pipelining over real
// loopback connections, 50 of them as in the load tests: each op is one
// PING sent and its PONG read on one of them. Client and server share the
// cores, so ns/op is the whole round trip's cost, not the server's alone;
// compare builds side by side. The server's allocations show in allocs/op.
func BenchmarkUnpipelined(b *testing.B) {
	_, addr := startServerCmds(b, Config{})
	req, want := []byte(respCmd("PING")), len("+PONG\r\n")
	b.ReportAllocs()
	b.SetParallelism(25) // 50 connections on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Error(err)
			return
		}
		defer conn.Close()
		reply := make([]byte, want)
		for pb.Next() {
			if _, err := conn.Write(req); err != nil {
				b.Error(err)
				return
			}
			if _, err := io.ReadFull(conn, reply); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
