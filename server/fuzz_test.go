package server

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// FuzzRESP sends arbitrary bytes to a real server over a real connection,
// then half-closes it and reads until the server closes it. Whatever the
// bytes are, the server must not crash (a panic outside a command would end
// the process) and a new connection must get PONG.
//
// The commands that stop or reconfigure the server are taken out of its
// table, so that a lucky input cannot turn the check itself off.
func FuzzRESP(f *testing.F) {
	s := newTestServer(f, Config{MaxRequestBytes: 1 << 20})
	for _, name := range []string{"shutdown", "config", "client", "flushall", "flushdb"} {
		delete(s.table.Names(), name)
	}
	addr := serveTest(f, s)
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(deadline))
		_, _ = c.Write(in) // the server may close first
		_ = c.(*net.TCPConn).CloseWrite()
		if _, err := io.Copy(io.Discard, c); err != nil && !strings.Contains(err.Error(), "reset") {
			t.Fatalf("reading until the server closes: %v", err)
		}
		if got := ping(t, addr); got != "+PONG\r\n" {
			t.Fatalf("PING on a new connection after %q: %q", in, got)
		}
	})
}

// ping sends PING on a new connection and returns the reply line.
func ping(t *testing.T, addr string) string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(deadline))
	if _, err := c.Write([]byte(respCmd("PING"))); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := io.ReadAtLeast(c, buf, len("+PONG\r\n"))
	return string(buf[:n])
}
