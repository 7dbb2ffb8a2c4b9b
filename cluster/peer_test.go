package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// fakePeer is a RESP server that does the handshake and answers
// "ECHO x" with x, "SLOW" once release is closed.
type fakePeer struct {
	secret  []byte
	release chan struct{}
	addr    string

	mu   sync.Mutex
	seen []string // LOG's arguments, in the order they ran
}

func startFakePeer(t *testing.T, secret []byte) *fakePeer {
	t.Helper()
	fp := &fakePeer{secret: secret, release: make(chan struct{})}
	srv := redcon.NewServerNetwork("tcp", "127.0.0.1:0", fp.handle, func(redcon.Conn) bool { return true }, nil)
	sig := make(chan error, 1)
	go func() { _ = srv.ListenServeAndSignal(sig) }()
	require.NoError(t, <-sig)
	fp.addr = srv.Addr().String()
	t.Cleanup(func() { _ = srv.Close() })
	return fp
}

type fakeConnState struct {
	ch     Challenge
	authed bool
}

func (fp *fakePeer) handle(conn redcon.Conn, cmd redcon.Command) {
	st, _ := conn.Context().(*fakeConnState)
	if st == nil {
		st = &fakeConnState{}
		conn.SetContext(st)
	}
	name := strings.ToUpper(string(cmd.Args[0]))
	switch {
	case name == PeerCommand && strings.EqualFold(string(cmd.Args[1]), "hello"):
		ch, err := ParseHello(cmd.Args[2:])
		if err != nil {
			conn.WriteError("NOPERM " + err.Error())
			return
		}
		st.ch = ch
		conn.WriteBulkString(ch.ServerNonce)
	case name == PeerCommand && strings.EqualFold(string(cmd.Args[1]), "auth"):
		key := st.ch.Verify([][]byte{PeerKey(fp.secret)}, cmd.Args[2])
		st.authed = key != nil
		if !st.authed {
			conn.WriteError("NOPERM bad cluster credentials")
			return
		}
		conn.WriteBulkString(st.ch.ServerMAC(key))
	case !st.authed:
		conn.WriteError("NOAUTH Authentication required.")
	case name == "ECHO":
		conn.WriteBulk(cmd.Args[1])
	case name == "LOG":
		fp.mu.Lock()
		fp.seen = append(fp.seen, string(cmd.Args[1]))
		fp.mu.Unlock()
		conn.WriteString("OK")
	case name == "SLOW":
		<-fp.release
		conn.WriteString("SLOW")
	case name == "NESTED":
		conn.WriteRaw([]byte("*2\r\n%1\r\n+a\r\n:1\r\n$-1\r\n"))
	case name == "BYE":
		conn.WriteString("OK")
		_ = conn.Close() // after the reply, as a process that exits closes its sockets
	}
}

func echoBatch(prefix string, n int) [][][]byte {
	cmds := make([][][]byte, n)
	for i := range cmds {
		cmds[i] = [][]byte{[]byte("ECHO"), fmt.Appendf(nil, "%s-%d", prefix, i)}
	}
	return cmds
}

func TestPeersMatchRepliesInOrder(t *testing.T) {
	secret := []byte("s3cret")
	fp := startFakePeer(t, secret)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret})
	defer p.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 50 {
				prefix := fmt.Sprint(g, "/", round)
				reps, err := p.Forward(context.Background(), fp.addr, echoBatch(prefix, 1+round%7))
				if !assert.NoError(t, err) {
					return
				}
				for i, r := range reps {
					want := fmt.Sprintf("%s-%d", prefix, i)
					assert.Equal(t, fmt.Sprintf("$%d\r\n%s\r\n", len(want), want), string(r))
				}
			}
		}()
	}
	wg.Wait()
	reps, err := p.Forward(context.Background(), fp.addr, [][][]byte{{[]byte("NESTED")}})
	require.NoError(t, err)
	assert.Equal(t, "*2\r\n%1\r\n+a\r\n:1\r\n$-1\r\n", string(reps[0]), "a RESP3 reply passes whole")
}

func TestPeersRefusedWithoutSecret(t *testing.T) {
	fp := startFakePeer(t, []byte("right"))
	p := NewPeers(PeersConfig{Name: "a", Secret: []byte("wrong")})
	defer p.Close()
	_, err := p.Forward(context.Background(), fp.addr, echoBatch("x", 1))
	require.ErrorIs(t, err, ErrUnreachable)
	assert.Contains(t, err.Error(), "NOPERM")
}

// TestPeersTimeout: a peer that stops answering fails the batch after the
// timeout; the pool then dials afresh.
func TestPeersTimeout(t *testing.T) {
	secret := []byte("k")
	fp := startFakePeer(t, secret)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret, Timeout: 200 * time.Millisecond, Conns: 1})
	defer p.Close()
	start := time.Now()
	_, err := p.Forward(context.Background(), fp.addr, [][][]byte{{[]byte("SLOW")}})
	require.ErrorIs(t, err, ErrUnreachable)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Less(t, time.Since(start), 2*time.Second)
	close(fp.release)
	reps, err := p.Forward(context.Background(), fp.addr, echoBatch("after", 2))
	require.NoError(t, err)
	assert.Len(t, reps, 2)
}

func TestPeersUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := NewPeers(PeersConfig{Name: "a"})
	defer p.Close()
	_, err = p.Forward(context.Background(), addr, echoBatch("x", 1))
	require.ErrorIs(t, err, ErrUnreachable)
}

// TestPeersTimeoutWhilePeerDoesNotRead: a peer that stops reading its
// socket must not hold a batch past the timeout in its write, nor block
// the timeout's close of the connection behind that write.
func TestPeersTimeoutWhilePeerDoesNotRead(t *testing.T) {
	secret := []byte("k")
	fp := startFakePeer(t, secret)
	var once sync.Once
	release := func() { once.Do(func() { close(fp.release) }) }
	t.Cleanup(release)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret, Timeout: 200 * time.Millisecond, Conns: 1})
	defer p.Close()
	cmds := [][][]byte{{[]byte("SLOW")}} // the peer stops reading while it runs
	big := make([]byte, 256<<10)
	for range 32 { // 8 MiB: more than a send buffer (4 MiB at most here) and a receiver that stopped reading hold
		cmds = append(cmds, [][]byte{[]byte("ECHO"), big})
	}
	done := make(chan error, 1)
	go func() {
		_, err := p.Forward(context.Background(), fp.addr, cmds)
		done <- err
	}()
	select {
	case err := <-done:
		require.ErrorIs(t, err, ErrUnreachable)
	case <-time.After(10 * time.Second):
		release() // lets the deferred Close through
		t.Fatal("Forward still waits, long past its 200ms timeout, on a peer that does not read")
	}
}

// chanReplier hands a batch's replies to a channel.
type chanReplier chan result

type result struct {
	replies [][]byte
	err     error
}

func (c chanReplier) Replies(replies [][]byte, err error) { c <- result{replies, err} }

// TestPeersSendKeepsLaneOrder: batches sent on one lane, without waiting
// for replies, run at the peer in the order they were sent, though the
// pool has several connections; each gets its own replies.
func TestPeersSendKeepsLaneOrder(t *testing.T) {
	secret := []byte("k")
	fp := startFakePeer(t, secret)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret, Conns: 4})
	defer p.Close()
	const batches = 200
	got := make(chanReplier, batches)
	var want []string
	for i := range batches {
		var payload []byte
		for j := range 1 + i%3 {
			arg := fmt.Sprint(i, ".", j)
			want = append(want, arg)
			payload = wire.AppendCommand(payload, [][]byte{[]byte("LOG"), []byte(arg)})
		}
		p.Send(fp.addr, 7, payload, 1+i%3, got)
	}
	for range batches {
		select {
		case r := <-got:
			require.NoError(t, r.err)
			for _, rep := range r.replies {
				assert.Equal(t, "+OK\r\n", string(rep))
			}
		case <-time.After(deadlineForTest):
			t.Fatal("a batch got no replies")
		}
	}
	fp.mu.Lock()
	defer fp.mu.Unlock()
	assert.Equal(t, want, fp.seen)
}

// TestPeersSendFailures: Send reports an unreachable peer, and a peer
// that does not answer within the timeout, to the Replier.
func TestPeersSendFailures(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gone := ln.Addr().String()
	require.NoError(t, ln.Close())
	secret := []byte("k")
	fp := startFakePeer(t, secret)
	defer close(fp.release)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret, Timeout: 200 * time.Millisecond})
	defer p.Close()
	got := make(chanReplier, 1)
	p.Send(gone, 1, wire.AppendCommand(nil, [][]byte{[]byte("ECHO"), []byte("x")}), 1, got)
	r := <-got
	require.ErrorIs(t, r.err, ErrUnreachable)

	start := time.Now()
	p.Send(fp.addr, 1, wire.AppendCommand(nil, [][]byte{[]byte("SLOW")}), 1, got)
	r = <-got
	require.ErrorIs(t, r.err, ErrUnreachable)
	assert.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 2*time.Second)
}

const deadlineForTest = 20 * time.Second

// TestPeersIdleConnectionClosedByPeer: a batch for a connection the peer
// closed while it was idle (its process died, and a supervisor restarted
// it) goes on a new connection instead of failing on the old one.
func TestPeersIdleConnectionClosedByPeer(t *testing.T) {
	secret := []byte("k")
	fp := startFakePeer(t, secret)
	p := NewPeers(PeersConfig{Name: "a", Secret: secret, Conns: 1})
	defer p.Close()
	_, err := p.Forward(context.Background(), fp.addr, [][][]byte{{[]byte("BYE")}})
	require.NoError(t, err)
	time.Sleep(3 * idleCheck) // the scenario: the connection is idle, and closed by the peer
	reps, err := p.Forward(context.Background(), fp.addr, echoBatch("after", 2))
	require.NoError(t, err, "the batch goes on a new connection")
	assert.Len(t, reps, 2)
}
