// Package testport picks the loopback ports that the cluster's and
// cmd/rlstore's tests choose before a process binds them: a node's port
// that others dial before it listens, or that it binds again when it
// restarts.
package testport

import (
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
)

// given holds the ports Stable returned in this process: a test that
// picks several before any is bound (a node's RESP port, another's
// gossip port) must not get one twice, which a random pick among 10,000
// did now and then (CI: node b's gossip port was node a's RESP port,
// "address already in use").
var given struct {
	mu    sync.Mutex
	ports map[string]bool
}

// Stable returns a port, free a moment ago for TCP and UDP on 127.0.0.1,
// below the ephemeral range (32768 and up). A port the kernel hands out
// once, as 127.0.0.1:0 does, it may hand out again as the local port of
// any outgoing connection on the host, so a process restarting on it
// could find it taken ("address already in use"); a port below the range
// is never so taken.
func Stable(t testing.TB) string {
	t.Helper()
	for range 100 {
		port := strconv.Itoa(20000 + rand.IntN(10000))
		if !take(port) {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", "127.0.0.1:"+port)
		_ = ln.Close()
		if err != nil {
			continue
		}
		_ = pc.Close()
		return port
	}
	t.Fatal("no free port between 20000 and 30000")
	return ""
}

// take records port as given, and reports false if it was given before.
func take(port string) bool {
	given.mu.Lock()
	defer given.mu.Unlock()
	if given.ports[port] {
		return false
	}
	if given.ports == nil {
		given.ports = map[string]bool{}
	}
	given.ports[port] = true
	return true
}
