package server

import (
	"bufio"
	"io"
	"net"
	"strings"
	"testing"
)

// BenchmarkPipelinedPing measures the server's per-command cost: a client
// pipelines batches of 100 PINGs over a real connection, so the network
// round trip is shared.
func BenchmarkPipelinedPing(b *testing.B) {
	_, addr := startServerCmds(b, Config{})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	const batch = 100
	req := []byte(strings.Repeat(respCmd("PING"), batch))
	r := bufio.NewReaderSize(conn, 64<<10)
	reply := make([]byte, len("+PONG\r\n")*batch)
	b.ReportAllocs()
	b.SetBytes(int64(len(req) / batch))
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		if _, err := conn.Write(req); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(r, reply); err != nil {
			b.Fatal(err)
		}
	}
}
