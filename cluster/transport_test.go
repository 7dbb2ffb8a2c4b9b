package cluster

import (
	"bytes"
	"io"
	"log"
	"net"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func newTestTransport(t *testing.T) *packetTransport {
	t.Helper()
	tr, err := newPacketTransport("127.0.0.1", 0, log.New(io.Discard, "", 0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Shutdown() })
	return tr
}

func (t *packetTransport) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(t.Port())) }

func recvPacket(t *testing.T, tr *packetTransport) *memberlist.Packet {
	t.Helper()
	select {
	case p := <-tr.PacketCh():
		return p
	case <-time.After(5 * time.Second):
		t.Fatal("no packet within 5 s")
		return nil
	}
}

// Each packet comes in a buffer of its own, of its size: the one the
// transport reads into is reused, and a packet memberlist still holds is
// not overwritten by the next.
func TestPacketTransportCopiesEachPacket(t *testing.T) {
	a, b := newTestTransport(t), newTestTransport(t)
	want := [][]byte{[]byte("first packet"), []byte("2nd")}
	for _, w := range want {
		if _, err := a.WriteToAddress(w, memberlist.Address{Addr: b.addr(), Name: "b"}); err != nil {
			t.Fatal(err)
		}
	}
	got := []*memberlist.Packet{recvPacket(t, b), recvPacket(t, b)}
	for i, p := range got {
		if !bytes.Equal(p.Buf, want[i]) {
			t.Fatalf("packet %d = %q, want %q", i, p.Buf, want[i])
		}
		if cap(p.Buf) > 64 {
			t.Fatalf("packet %d's buffer holds %d bytes for %d", i, cap(p.Buf), len(p.Buf))
		}
		if p.From.String() != a.addr() {
			t.Fatalf("packet %d from %s, want %s", i, p.From, a.addr())
		}
		if p.Timestamp.IsZero() {
			t.Fatalf("packet %d has no time", i)
		}
	}
}

// A packet costs its own size in allocations, not NetTransport's 64 KiB:
// what an idle cluster's lease rounds cost its collector.
func TestPacketTransportAllocatesPacketSize(t *testing.T) {
	a, b := newTestTransport(t), newTestTransport(t)
	to := memberlist.Address{Addr: b.addr(), Name: "b"}
	msg := bytes.Repeat([]byte{'x'}, 40)
	send := func(n int) {
		for range n {
			if _, err := a.WriteToAddress(msg, to); err != nil {
				t.Fatal(err)
			}
			recvPacket(t, b)
		}
	}
	send(10) // warm up
	const n = 200
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	send(n)
	runtime.ReadMemStats(&m1)
	if per := (m1.TotalAlloc - m0.TotalAlloc) / n; per > 2048 {
		t.Fatalf("%d bytes allocated a packet of %d, sending and receiving", per, len(msg))
	}
}

// Streams: a dial reaches the other transport's StreamCh, and a name is
// resolved for packets as NetTransport resolves it.
func TestPacketTransportStreamsAndNames(t *testing.T) {
	a, b := newTestTransport(t), newTestTransport(t)
	c, err := a.DialAddressTimeout(memberlist.Address{Addr: b.addr()}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	select {
	case s := <-b.StreamCh():
		_ = s.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("no stream within 5 s")
	}
	if _, err := a.WriteTo([]byte("by name"), net.JoinHostPort("localhost", strconv.Itoa(b.Port()))); err != nil {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	if p := recvPacket(t, b); string(p.Buf) != "by name" {
		t.Fatalf("got %q", p.Buf)
	}
}

// The address advertised: the one given, else the one bound, as NetTransport's.
func TestPacketTransportAdvertises(t *testing.T) {
	tr := newTestTransport(t)
	ip, port, err := tr.FinalAdvertiseAddr("", 0)
	if err != nil || !ip.Equal(net.IPv4(127, 0, 0, 1)) || port != tr.Port() {
		t.Fatalf("FinalAdvertiseAddr(\"\", 0) = %v %d %v, want 127.0.0.1 %d", ip, port, err, tr.Port())
	}
	ip, port, err = tr.FinalAdvertiseAddr("10.1.2.3", 7946)
	if err != nil || ip.String() != "10.1.2.3" || len(ip) != 4 || port != 7946 {
		t.Fatalf("FinalAdvertiseAddr(10.1.2.3, 7946) = %v %d %v", ip, port, err)
	}
	if _, _, err := tr.FinalAdvertiseAddr("not an ip", 1); err == nil {
		t.Fatal("a bad address was accepted")
	}
	if err := tr.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Shutdown(); err != nil { // memberlist's Shutdown after a failed Create's, say
		t.Fatal(err)
	}
}
