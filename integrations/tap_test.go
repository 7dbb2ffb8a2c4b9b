package integrations

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// The tap stands between a library's test suite and rlstore and records
// every request and reply on a tape (tape_test.go). It serves one request at
// a time across all its connections and servers, and before each one stops
// the server's clock at the instant it records for it (DEBUG SET-CLOCK, on
// a connection of its own), so that the server decides it exactly then.
// Replaying the tape sets the same instants, so the replies must come out
// the same byte for byte: nothing about time needs loosening. One request at
// a time also makes the order the server saw between connections the order
// on the tape. A pipelining client still pipelines to the tap; the tap
// passes its requests on one by one, which only slows it.

// tapServer is how a tape's server is started: rlstore's flags beyond
// --port 0 --enable-debug-command yes, and the password its control
// connection sends.
type tapServer struct {
	args []string
	pass string
}

// tapServers are the servers tapes name: "main", and "auth" for suites that
// also test a server with a password (limits' redis_auth).
var tapServers = map[string]tapServer{
	"main": {},
	"auth": {args: []string{"--requirepass", "sekret"}, pass: "sekret"},
}

// startTapServer starts a fresh rlstore for a tape's server name and
// returns its address.
func startTapServer(t testing.TB, name string) (string, error) {
	ts, ok := tapServers[name]
	if !ok {
		return "", fmt.Errorf("no server %q (tapServers)", name)
	}
	args := append([]string{"--port", "0", "--enable-debug-command", "yes"}, ts.args...)
	return startRlstoreArgs(t, args...), nil
}

// recorder holds one tape being recorded, shared by a suite's taps.
type recorder struct {
	mu     sync.Mutex // guards everything below, and orders all requests
	events []event
	last   int64 // the last instant given out: each request gets a later one
	conns  int
}

// tap is the recording proxy in front of one server.
type tap struct {
	rec      *recorder
	name     string // its tapServers name
	upstream string
	ctl      *respConn // DEBUG SET-CLOCK goes here, guarded by rec.mu
	ln       net.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex // guards open
	open     map[net.Conn]bool
}

// respConn is a client connection that sends one request and reads its reply.
type respConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRESP(addr string) (*respConn, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	return &respConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}

// do sends args and returns the raw reply, waiting at most replyWait.
func (c *respConn) do(args ...[]byte) ([]byte, error) {
	_ = c.SetDeadline(time.Now().Add(replyWait))
	if _, err := c.Write(encodeCommand(args)); err != nil {
		return nil, err
	}
	return readReply(c.r, nil)
}

// replyWait bounds each reply; rlstore answers in microseconds, a busy CI
// host in seconds at worst.
const replyWait = 20 * time.Second

// setClock stops the server's clock at ns, through c.
func (c *respConn) setClock(ns int64) error {
	reply, err := c.do([]byte("DEBUG"), []byte("SET-CLOCK"), []byte(strconv.FormatInt(ns, 10)))
	if err == nil && string(reply) != "+OK\r\n" {
		err = fmt.Errorf("DEBUG SET-CLOCK: %q", reply)
	}
	return err
}

// controlConn opens the connection DEBUG SET-CLOCK goes through, with the
// server's password if it has one.
func controlConn(addr, pass string) (*respConn, error) {
	c, err := dialRESP(addr)
	if err != nil || pass == "" {
		return c, err
	}
	if reply, err := c.do([]byte("AUTH"), []byte(pass)); err != nil || string(reply) != "+OK\r\n" {
		c.Close()
		return nil, fmt.Errorf("AUTH: %q %v", reply, err)
	}
	return c, nil
}

// startTap starts a tap for the server name at upstream and returns it;
// clients connect to its Addr. It stops when the test ends.
func startTap(t testing.TB, rec *recorder, name, upstream string) *tap {
	t.Helper()
	ctl, err := controlConn(upstream, tapServers[name].pass)
	if err != nil {
		t.Fatalf("tap %s: %v", name, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tp := &tap{rec: rec, name: name, upstream: upstream, ctl: ctl, ln: ln, open: map[net.Conn]bool{}}
	tp.wg.Add(1)
	go tp.accept()
	t.Cleanup(tp.close)
	return tp
}

func (tp *tap) Addr() string { return tp.ln.Addr().String() }

func (tp *tap) accept() {
	defer tp.wg.Done()
	for {
		c, err := tp.ln.Accept()
		if err != nil {
			return
		}
		tp.mu.Lock()
		tp.open[c] = true
		tp.mu.Unlock()
		tp.wg.Add(1)
		go tp.serve(c)
	}
}

// close stops accepting, closes every connection and waits for them.
func (tp *tap) close() {
	tp.ln.Close()
	tp.mu.Lock()
	for c := range tp.open {
		c.Close()
	}
	tp.mu.Unlock()
	tp.wg.Wait()
	tp.ctl.Close()
}

// serve passes client's requests to the server one at a time, recording them.
func (tp *tap) serve(client net.Conn) {
	defer tp.wg.Done()
	defer func() {
		tp.mu.Lock()
		delete(tp.open, client)
		tp.mu.Unlock()
		client.Close()
	}()
	tp.rec.mu.Lock()
	up, err := dialRESP(tp.upstream) // under the lock: connections open in the tape's order
	id := 0
	if err == nil {
		tp.rec.conns++
		id = tp.rec.conns
		tp.rec.events = append(tp.rec.events, event{kind: "open", conn: id, server: tp.name})
	}
	tp.rec.mu.Unlock()
	if err != nil {
		return
	}
	defer func() {
		tp.rec.mu.Lock()
		tp.rec.events = append(tp.rec.events, event{kind: "close", conn: id})
		up.Close()
		tp.rec.mu.Unlock()
	}()
	r := bufio.NewReaderSize(client, 64<<10)
	for {
		args, err := readCommand(r)
		if err != nil {
			return
		}
		reply, err := tp.exchange(id, up, args)
		if len(reply) > 0 {
			if _, werr := client.Write(reply); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// exchange sends one request at the next instant and records it.
func (tp *tap) exchange(id int, up *respConn, args [][]byte) ([]byte, error) {
	tp.rec.mu.Lock()
	defer tp.rec.mu.Unlock()
	at := max(time.Now().UnixNano(), tp.rec.last+1)
	tp.rec.last = at
	if err := tp.ctl.setClock(at); err != nil {
		return nil, err
	}
	reply, err := up.do(args...)
	if err != nil { // the server closed the connection: recorded as no reply
		reply = []byte{}
	}
	tp.rec.events = append(tp.rec.events, event{kind: "req", conn: id, at: at, args: args, reply: reply})
	return reply, err
}
