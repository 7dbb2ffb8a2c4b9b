package main

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotaLoad sends RL.SLIDE for a set of keys, each with a limit of
// handoffLimit an hour, and counts every admission per key across the
// whole run: a key that lost its state somewhere (a fresh quota at a new
// owner) admits more than handoffLimit in all.
type quotaLoad struct {
	keys []string

	mu       sync.Mutex // guards the fields below
	admitted map[string]int
	sent     int
	errs     []error
}

const handoffLimit = 20

func newQuotaLoad(keys []string) *quotaLoad {
	return &quotaLoad{keys: keys, admitted: map[string]int{}}
}

// round sends one pipeline of every key through c.
func (q *quotaLoad) round(ctx context.Context, c *redis.Client) {
	pipe := c.Pipeline()
	cmds := make([]*redis.Cmd, len(q.keys))
	for i, k := range q.keys {
		cmds[i] = pipe.Do(ctx, "RL.SLIDE", k, handoffLimit, 3600)
	}
	_, _ = pipe.Exec(ctx)
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, cmd := range cmds {
		q.sent++
		rep, err := cmd.Int64Slice()
		switch {
		case err != nil:
			q.errs = append(q.errs, err)
		case rep[0] == 1:
			q.admitted[q.keys[i]]++
		}
	}
}

// over returns how many admissions went beyond the keys' limits.
func (q *quotaLoad) over() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for _, a := range q.admitted {
		n += max(a-handoffLimit, 0)
	}
	return n
}

// allAt reports whether every key has admitted limit.
func (q *quotaLoad) allAt(limit int) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range q.keys {
		if q.admitted[k] < limit {
			return false
		}
	}
	return true
}

// run sends rounds through each client until stop is closed, at most
// maxRounds each.
func (q *quotaLoad) run(ctx context.Context, stop <-chan struct{}, cs ...*redis.Client) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range maxRounds {
				select {
				case <-stop:
					return
				default:
				}
				q.round(ctx, c)
			}
		}()
	}
	return &wg
}

const maxRounds = 5000

// keysOwnedBy returns n keys that owner owns, as asking via says.
func keysOwnedBy(t *testing.T, via *redis.Client, owner, prefix string, n int) []string {
	var keys []string
	for i := 0; len(keys) < n; i++ {
		keys = append(keys, keyOwnedBy(t, via, owner, fmt.Sprint(prefix, i, ":")))
	}
	return keys
}

// TestHandoffProcessLeaveUnderLoad: SIGTERM of an owner while clients keep
// deciding its keys through the other nodes loses no state. Each key is
// half used before the leave and used on through it; no key admits more
// than its limit in all, and afterwards each is at its limit.
func TestHandoffProcessLeaveUnderLoad(t *testing.T) {
	leaveUnderLoad(t, "leave:", func(p *clusterProc) { p.Signal(t, syscall.SIGTERM) })
}

// TestHandoffProcessShutdownCommand: the SHUTDOWN command stops a node as
// SIGTERM does, handing its slots over first, so a redeploy that stops
// nodes with redis-cli resets no limit either. Without replicas, so that
// only the handoff can carry the keys' state.
func TestHandoffProcessShutdownCommand(t *testing.T) {
	leaveUnderLoad(t, "shut:", func(p *clusterProc) {
		// go-redis reports the connection closing without a reply, which
		// is how a server that stops answers SHUTDOWN, as success.
		require.NoError(t, newClient(t, p.addr).Shutdown(context.Background()).Err())
	}, "--replicas", "0")
}

// leaveUnderLoad stops the second of three nodes with stop while clients
// decide its keys through the other two, and checks that no key's state
// was lost: the node handed its slots over before it went.
func leaveUnderLoad(t *testing.T, prefix string, stop func(*clusterProc), extra ...string) {
	// lan timing: at fast, a host loaded by -race saw a live node declared
	// dead under this load, and its leases lapse (thousands of CLUSTERDOWN).
	ps := startClusterProcs(t, 3, append([]string{"--cluster-timing", "lan"}, extra...)...)
	c0, c2 := newClient(t, ps[0].addr), newClient(t, ps[2].addr)
	ctx := context.Background()
	q := newQuotaLoad(keysOwnedBy(t, c0, "p1", prefix, 40))
	for range handoffLimit / 2 {
		q.round(ctx, c0)
	}
	require.Zero(t, q.over())
	done := make(chan struct{})
	wg := q.run(ctx, done, c0, c2)
	stop(ps[1])
	assert.Equal(t, 0, ps[1].ExitCode(t))
	waitClusterSize(t, ps[0], 2)
	waitClusterSize(t, ps[2], 2)
	close(done)
	wg.Wait()
	for range 3 {
		q.round(ctx, c0)
		q.round(ctx, c2)
	}
	t.Logf("%d requests across the leave; %d admitted above the limit; %d errors", q.sent, q.over(), len(q.errs))
	assert.Zero(t, q.over(), "admissions above the limit: a key started from a fresh quota after its owner left")
	assert.Empty(t, q.errs[:min(len(q.errs), 3)], "errors while a node left gracefully (the first three)")
	for _, k := range q.keys {
		assert.Equal(t, handoffLimit, q.admitted[k], "%s: at its limit after the leave", k)
	}
	ps[1].WaitLog(t, regexp.MustCompile(`handed slots over`))
}

// TestHandoffProcessJoinUnderLoad: a node joining while clients keep
// deciding keys through every node takes over its slots with their state:
// across the whole run no key admits more than its limit.
func TestHandoffProcessJoinUnderLoad(t *testing.T) {
	ps := startClusterProcs(t, 2, "--cluster-timing", "lan") // as leaveUnderLoad
	c0, c1 := newClient(t, ps[0].addr), newClient(t, ps[1].addr)
	ctx := context.Background()
	var keys []string
	for i := range 200 {
		keys = append(keys, fmt.Sprint("join:", i))
	}
	q := newQuotaLoad(keys)
	for range handoffLimit / 2 {
		q.round(ctx, c0)
	}
	stop := make(chan struct{})
	wg := q.run(ctx, stop, c0, c1)
	p2 := startClusterProc(t, "p2", ps[0].gossip, "--cluster-timing", "lan")
	for _, p := range append(ps, p2) {
		waitClusterSize(t, p, 3)
	}
	c2 := newClient(t, p2.addr)
	wg2 := q.run(ctx, stop, c2) // the new node's own clients, from as soon as it is a member
	moved := 0
	require.Eventually(t, func() bool {
		moved = movedKeys(t, c2, keys)
		return moved > 0 && settled(t, c2)
	}, deadline, 10*time.Millisecond, "the new node owns some of the keys")
	for range 3 {
		q.round(ctx, c0)
	}
	close(stop)
	wg.Wait()
	wg2.Wait()
	for range handoffLimit {
		q.round(ctx, c2)
	}
	t.Logf("%d requests across the join; %d of %d keys moved to the new node; %d admitted above the limit; %d errors",
		q.sent, moved, len(keys), q.over(), len(q.errs))
	assert.Zero(t, q.over(), "admissions above the limit: a key started from a fresh quota after its slot moved")
	assert.Empty(t, q.errs[:min(len(q.errs), 3)], "errors while a node joined (the first three)")
	for _, k := range keys {
		assert.Equal(t, handoffLimit, q.admitted[k], "%s: at its limit", k)
	}
}

// movedKeys counts the keys p2 owns, asking through c.
func movedKeys(t *testing.T, c *redis.Client, keys []string) int {
	t.Helper()
	n := 0
	for _, k := range keys {
		rep, err := c.Do(context.Background(), "RL.CLUSTER", "OWNER", k).Result()
		require.NoError(t, err)
		if rep.(map[any]any)["owner"] == "p2" {
			n++
		}
	}
	return n
}

// servingInfo: the node holds its lease and serves every slot it owns
// (none waits for a dead owner's lease to run out).
var servingInfo = regexp.MustCompile(`rl_cluster_quorum:1\r\n(.|\n)*rl_cluster_takeover_slots_waiting:0\r\n`)

var settledInfo = regexp.MustCompile(`rl_cluster_handoff_slots_importing:0\r\n(.|\n)*rl_cluster_handoff_slots_migrating:0\r\n`)

// settled reports whether the node behind c is moving no slot in or out.
// An error (a read timeout on a loaded host) is a no: it polls again. (A
// require in the condition's goroutine ended that goroutine, so the
// Eventually that called it waited out its whole deadline and failed.)
func settled(t *testing.T, c *redis.Client) bool {
	info, err := c.Info(context.Background(), "cluster").Result()
	if err != nil {
		t.Logf("polling INFO cluster: %v", err)
		return false
	}
	return settledInfo.MatchString(info) && servingInfo.MatchString(info)
}

// waitHandedOver waits until p moves no slot in or out.
func waitHandedOver(t *testing.T, p *clusterProc) {
	t.Helper()
	c := newClient(t, p.addr)
	require.Eventually(t, func() bool { return settled(t, c) }, deadline, 10*time.Millisecond, "%s ends its handoffs", p.name)
}
