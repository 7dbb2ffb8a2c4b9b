package main

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/tidwall/redcon"
)

// TestSplitLoadWaitsForRepliesInFlight replays, against a scripted owner,
// what CI's run of 7ae9e6a read as "21 of 20" in TestRedPauseNearDetection's
// set-up: the owner admits a key's 20th request, then denies another
// client's, whose reply comes first. The 20th admission's reply comes only
// once the load has counted the key as used up (or waits for it). One
// request of the key got an error the owner never decided on, so the rule
// "at most the errored requests are unseen admissions" alone counts that
// error as the 20th, and the 20th's reply as a 21st.
func TestSplitLoadWaitsForRepliesInFlight(t *testing.T) {
	l := &splitLoad{admitted: map[string]int{}, replies: map[string]int{}, start: time.Now(), when: map[string][]string{}}
	o := &scriptedOwner{errAt: 5, counted: func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.full == nil || l.awaiting != nil
	}}
	addr := o.serve(t)
	var cs []*redis.Client
	for range 2 {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
		t.Cleanup(func() { _ = c.Close() })
		cs = append(cs, c)
	}
	stop := make(chan struct{})
	wg := l.run(context.Background(), cs, []string{"k"}, stop)
	l.waitUsedUp(t, []string{"k"})
	l.waitRounds(t, 2)
	close(stop)
	wg.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	require.Equal(t, splitLimit, o.admitted, "the owner admitted the limit")
	require.Positive(t, o.denied, "the owner denied the key")
	assert.LessOrEqual(t, l.admitted["k"], splitLimit, "admissions counted, by client@seconds/remaining: %v", l.when["k"])
}

// scriptedOwner answers RL.SLIDE for one key as its owner would, with an
// error for the errAt-th request (undecided), and the reply of the
// admission that reaches the limit held until counted reports true.
type scriptedOwner struct {
	errAt   int
	counted func() bool

	mu       sync.Mutex // guards the counts
	requests int
	admitted int
	denied   int
}

func (o *scriptedOwner) serve(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := redcon.NewServer("", o.handle, nil, nil)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

func (o *scriptedOwner) handle(conn redcon.Conn, cmd redcon.Command) {
	switch strings.ToUpper(string(cmd.Args[0])) {
	case "RL.SLIDE":
	case "HELLO":
		conn.WriteError("ERR unknown command 'HELLO'")
		return
	default:
		conn.WriteString("OK")
		return
	}
	o.mu.Lock()
	o.requests++
	switch {
	case o.requests == o.errAt:
		o.mu.Unlock()
		conn.WriteError("CLUSTERDOWN the owner's forward timed out")
		return
	case o.admitted == splitLimit:
		o.denied++
		o.mu.Unlock()
		writeInts(conn, 0, splitLimit, 0, 3_600_000, 3_600_000)
		return
	}
	o.admitted++
	remaining := splitLimit - o.admitted
	o.mu.Unlock()
	if remaining == 0 {
		deadline := time.Now().Add(10 * time.Second)
		for !o.counted() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // polls the load's state: the reply waits for its count
		}
	}
	writeInts(conn, 1, splitLimit, int64(remaining), 0, 3_600_000)
}

func writeInts(conn redcon.Conn, vs ...int64) {
	conn.WriteArray(len(vs))
	for _, v := range vs {
		conn.WriteInt64(v)
	}
}

// TestSplitLoadOwnerCounts checks the set-up's reading of the owners'
// counts: a count skipped with no error on the key is a request counted
// twice; with an error it is that request's; a count twice, two deciders.
func TestSplitLoadOwnerCounts(t *testing.T) {
	for _, c := range []struct {
		name              string
		counts            []int64
		errs              int
		wantHidden, twice int
	}{
		{"every count seen, out of order", []int64{2, 1, 4, 3}, 0, 0, 0},
		{"a count skipped, no error", []int64{1, 2, 4}, 0, 1, 0},
		{"a count skipped, an error", []int64{1, 2, 4}, 1, 0, 0},
		{"a count twice", []int64{1, 2, 2, 3}, 0, 0, 1},
	} {
		l := &splitLoad{counts: map[string][]int64{"k": c.counts}, unknown: map[string]int{"k": c.errs}}
		hidden, twice := l.ownerCountsLocked([]string{"k"})
		assert.Equal(t, c.wantHidden, hidden, "%s: hidden", c.name)
		assert.Equal(t, c.twice, twice, "%s: twice", c.name)
	}
}
