package cluster

import (
	"fmt"
	"log"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-sockaddr"
	"github.com/hashicorp/memberlist"
)

// packetTransport is memberlist's NetTransport (UDP for packets, a TCP
// connection for each stream, on one address and port) but for what each
// packet costs. NetTransport reads every packet into a fresh 64 KiB buffer
// and hands memberlist that buffer, sliced to the packet, so each packet
// of a few dozen bytes allocated 64 KiB: with the lease's rounds, an idle
// node of three received about 30 packets a second and allocated 2 MB a
// second there, 97% of all it allocated, and the collector (which the
// server lets hold 2 MiB of garbage, cmd/rlstore/gctune.go) ran about
// once a second for it. packetTransport reads into one buffer it keeps and
// hands memberlist a copy of the packet's size; and it sends to a numeric
// address without resolving it (NetTransport's net.ResolveUDPAddr per
// packet). It counts no go-metrics, which nothing here exports.
type packetTransport struct {
	udp      *net.UDPConn
	tcp      *net.TCPListener
	bindAddr string // as configured: "0.0.0.0" advertises a private address, as NetTransport does
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	logger   *log.Logger
	shutdown atomic.Bool
	wg       sync.WaitGroup
}

var _ memberlist.NodeAwareTransport = (*packetTransport)(nil)

const (
	// packetBufSize is the largest packet read, as NetTransport's.
	packetBufSize = 65536
	// udpRecvBufSize is the socket's receive buffer it asks for, halving
	// until the kernel accepts one, as NetTransport does.
	udpRecvBufSize = 2 << 20
)

// newPacketTransport listens on addr:port, TCP and UDP; port 0 picks a
// port free for both, trying up to 10 times (as memberlist.Create does
// for NetTransport).
func newPacketTransport(addr string, port int, logger *log.Logger) (*packetTransport, error) {
	tries := 1
	if port == 0 {
		tries = 10
	}
	var err error
	for range tries {
		var t *packetTransport
		if t, err = listenPackets(addr, port, logger); err == nil {
			return t, nil
		}
	}
	return nil, fmt.Errorf("could not set up network transport: %w", err)
}

func listenPackets(addr string, port int, logger *log.Logger) (*packetTransport, error) {
	ip := net.ParseIP(addr)
	tcp, err := net.ListenTCP("tcp", &net.TCPAddr{IP: ip, Port: port})
	if err != nil {
		return nil, fmt.Errorf("failed to start TCP listener on %q port %d: %w", addr, port, err)
	}
	if port == 0 {
		port = tcp.Addr().(*net.TCPAddr).Port
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip, Port: port})
	if err != nil {
		_ = tcp.Close()
		return nil, fmt.Errorf("failed to start UDP listener on %q port %d: %w", addr, port, err)
	}
	if err := setUDPRecvBuf(udp); err != nil {
		_, _ = tcp.Close(), udp.Close()
		return nil, fmt.Errorf("failed to resize UDP buffer: %w", err)
	}
	t := &packetTransport{udp: udp, tcp: tcp, bindAddr: addr, logger: logger,
		packetCh: make(chan *memberlist.Packet), streamCh: make(chan net.Conn)}
	t.wg.Add(2)
	go t.tcpListen()
	go t.udpListen()
	return t, nil
}

func setUDPRecvBuf(c *net.UDPConn) error {
	var err error
	for size := udpRecvBufSize; size > 0; size /= 2 {
		if err = c.SetReadBuffer(size); err == nil {
			return nil
		}
	}
	return err
}

// Port is the port it listens on.
func (t *packetTransport) Port() int { return t.tcp.Addr().(*net.TCPAddr).Port }

// FinalAdvertiseAddr implements memberlist.Transport, as NetTransport does.
func (t *packetTransport) FinalAdvertiseAddr(ip string, port int) (net.IP, int, error) {
	if ip != "" {
		a := net.ParseIP(ip)
		if a == nil {
			return nil, 0, fmt.Errorf("failed to parse advertise address %q", ip)
		}
		if a4 := a.To4(); a4 != nil {
			a = a4
		}
		return a, port, nil
	}
	if t.bindAddr == "0.0.0.0" {
		p, err := sockaddr.GetPrivateIP()
		if err != nil {
			return nil, 0, fmt.Errorf("failed to get interface addresses: %w", err)
		}
		if p == "" {
			return nil, 0, fmt.Errorf("no private IP address found, and explicit IP not provided")
		}
		a := net.ParseIP(p)
		if a == nil {
			return nil, 0, fmt.Errorf("failed to parse advertise address: %q", p)
		}
		return a, t.Port(), nil
	}
	return t.tcp.Addr().(*net.TCPAddr).IP, t.Port(), nil
}

// WriteTo implements memberlist.Transport.
func (t *packetTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport. A numeric
// address is sent to as it is; a name is resolved, as NetTransport
// resolves every address. The time is taken after the write, as there.
func (t *packetTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	if ap, err := netip.ParseAddrPort(a.Addr); err == nil {
		_, err = t.udp.WriteToUDPAddrPort(b, ap)
		return time.Now(), err
	}
	ua, err := net.ResolveUDPAddr("udp", a.Addr)
	if err != nil {
		return time.Time{}, err
	}
	_, err = t.udp.WriteTo(b, ua)
	return time.Now(), err
}

// PacketCh implements memberlist.Transport.
func (t *packetTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// DialTimeout implements memberlist.Transport.
func (t *packetTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport.
func (t *packetTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	d := net.Dialer{Timeout: timeout}
	return d.Dial("tcp", a.Addr)
}

// StreamCh implements memberlist.Transport.
func (t *packetTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// Shutdown implements memberlist.Transport: it closes the listeners and
// waits for their goroutines (memberlist reads the channels until it
// returns, as with NetTransport).
func (t *packetTransport) Shutdown() error {
	if t.shutdown.Swap(true) {
		return nil
	}
	_, _ = t.tcp.Close(), t.udp.Close()
	t.wg.Wait()
	return nil
}

// tcpListen hands each connection accepted to memberlist, backing off
// after an error from 5 ms up to a second, as NetTransport does.
func (t *packetTransport) tcpListen() {
	defer t.wg.Done()
	const baseDelay, maxDelay = 5 * time.Millisecond, time.Second
	var delay time.Duration
	for {
		conn, err := t.tcp.AcceptTCP()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			delay = min(max(2*delay, baseDelay), maxDelay)
			t.logger.Printf("[ERR] memberlist: Error accepting TCP connection: %v", err)
			time.Sleep(delay)
			continue
		}
		delay = 0
		t.streamCh <- conn
	}
}

// udpListen reads each packet into buf, which it keeps, and hands
// memberlist a copy of the packet's size, stamped as close to the read as
// it can be (memberlist times probes' round trips with it).
func (t *packetTransport) udpListen() {
	defer t.wg.Done()
	buf := make([]byte, packetBufSize)
	for {
		n, from, err := t.udp.ReadFrom(buf)
		ts := time.Now()
		if err != nil {
			if t.shutdown.Load() {
				return
			}
			t.logger.Printf("[ERR] memberlist: Error reading UDP packet: %v", err)
			continue
		}
		if n < 1 {
			t.logger.Printf("[ERR] memberlist: UDP packet too short (%d bytes) %s", n, memberlist.LogAddress(from))
			continue
		}
		t.packetCh <- &memberlist.Packet{Buf: append([]byte(nil), buf[:n]...), From: from, Timestamp: ts}
	}
}
