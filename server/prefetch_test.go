package server

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection that parses requests ahead (decide.Decisions.Prefetch) returns the same
// commands, pipeline peeks and reads, and protocol errors, at the same
// points, as one that parses each as it comes to it: for streams of whole,
// inline, malformed and oversized requests, cut into two reads at every byte.
func TestParseAheadAgreesWithParser(t *testing.T) {
	streams := []string{
		respCmd("RL.SLIDE", "user:1", "100", "60") + respCmd("rl.token", "", "10", "1", "1s", "COST", "2") +
			respCmd("PEEK") + respCmd("CL.THROTTLE", "k\r\nx", "15", "1", "60") + respCmd("READ") + respCmd("PING", "x") + respCmd("PING"),
		respCmd("PING") + "PING x\r\n" + respCmd("RL.SLIDE", "a", "1", "1") + "\r\n" + respCmd("PEEK") + respCmd("ECHO", "e"),
		respCmd("RL.SLIDE", "a", "1", "1") + respCmd("RL.SLIDE", "b", "1", "1") + "*2\r\n$-1\r\n" + respCmd("PING"),
		respCmd("RL.SLIDE", "a", "1", "1") + "*0\r\n" + respCmd("PING"),
		respCmd("RL.SLIDE", "a", "1", "1") + "*2\r\n$3\r\nabc\r\n$2\r\nxyz\r\n" + respCmd("PING"),
		respCmd("PING") + respCmd("ECHO", strings.Repeat("x", 300)) + respCmd("PEEK") + respCmd("PING") + "*99999999999\r\n",
		respCmd("PING") + respCmd(append([]string{"ECHO"}, strings.Split(strings.Repeat("a ", resp.MaxAheadArgs), " ")...)...) +
			respCmd("PEEK") + respCmd("PING"),
	}
	for _, st := range streams {
		for cut := 0; cut <= len(st); cut++ {
			chunks := []string{st[:cut], st[cut:]}
			want := runStream(chunks, 0)
			for _, ahead := range []int{1, 2, decide.PrefetchMax} {
				require.Equal(t, want, runStream(chunks, ahead), "%q cut at %d, %d ahead", st, cut, ahead)
			}
		}
	}
}

// runStream feeds chunks to a connection's read buffer, a read each,
// parsing ahead up to ahead requests after each read, and lists what it
// runs: each command's arguments, what PEEK sees with PeekPipeline and READ
// takes with ReadPipeline, and the protocol error that ends it.
func runStream(chunks []string, ahead int) []string {
	rc := resp.NewConn(&resp.Guard{}, 1<<10, 0, nil)
	var out []string
	for _, ch := range chunks {
		for len(ch) > 0 {
			n := rc.Feed([]byte(ch))
			ch = ch[n:]
			if ahead > 0 {
				rc.ParseAhead(ahead)
			}
			for {
				args, err := rc.Command()
				if err != nil {
					return append(out, "error "+err.Error())
				}
				if args == nil {
					break
				}
				out = append(out, fmt.Sprintf("%q", args))
				switch string(args[0]) {
				case "PEEK":
					out = append(out, fmt.Sprintf("peek %q", rc.PeekPipeline()))
				case "READ":
					out = append(out, fmt.Sprintf("read %q", rc.ReadPipeline()))
				}
			}
		}
	}
	return out
}

// A request another node forwarded is prefetched by the key of the
// command it wraps.
func TestAheadKeyOfForwardedRequest(t *testing.T) {
	s := newTestServer(t, Config{})
	var last [2]*core.Command
	rc := resp.NewConn(&resp.Guard{}, DefaultMaxRequestBytes, 0, nil)
	for _, r := range []string{respCmd("RL.HOP", "1", "2", "RL.SLIDE", "user:1", "100", "60"), respCmd("rl.hop", "1", "2", "PING"),
		respCmd("RL.SLIDE", "user:2", "1", "1"), respCmd("PING", "x")} {
		rc.Feed([]byte(r))
	}
	rc.ParseAhead(decide.PrefetchMax)
	require.Equal(t, 4, rc.Ahead())
	for i, want := range []struct {
		key string
		arg int
	}{{"user:1", 4}, {"", 0}, {"user:2", 1}, {"", 0}} {
		key, arg := s.dec.AheadKey(rc, i, &last)
		assert.Equal(t, want.key, string(key), "request %d", i)
		assert.Equal(t, want.arg, arg, "request %d", i)
	}
}

// The decisions whose key is their first argument are the commands whose
// key is prefetched, under any case of their names.
func TestPrefetchedCommands(t *testing.T) {
	s := newTestServer(t, Config{})
	for _, name := range []string{"RL.SLIDE", "rl.token", "Rl.Fixed", "RL.LOG", "rl.leaky", "CL.THROTTLE"} {
		cm := s.table.Find([]byte(name))
		require.NotNil(t, cm, name)
		assert.NotZero(t, cm.Flags&core.FlagPrefetch, name)
		assert.Equal(t, 1, cm.FirstKey, name)
	}
	for _, name := range []string{"RL.CHECK", "RL.POLICY", "PING", "DEL", "rl.slid", "cl.throttlex"} {
		cm := s.table.Find([]byte(name))
		assert.True(t, cm == nil || cm.Flags&core.FlagPrefetch == 0, name)
	}
}

// A pipeline of decisions, some cut across reads, gets the replies it gets
// without prefetching: prefetchBatch reads ahead only what is whole.
func TestPipelinedDecisionsWithPrefetch(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	var b strings.Builder
	for i := range 40 {
		b.WriteString(respCmd("RL.SLIDE", "pf:"+strings.Repeat("k", i%5), "3", "60"))
	}
	all := b.String()
	c.send(t, all[:len(all)/3])
	c.send(t, all[len(all)/3:])
	for i := range 40 {
		require.Equal(t, "*5", c.line(t))
		allowed := c.line(t)
		assert.Equal(t, map[bool]string{true: ":1", false: ":0"}[i/5 < 3], allowed, "request %d", i)
		for range 4 {
			c.line(t)
		}
	}
}

// A batch whose decisions are hashed once, by decide.Decisions.Prefetch, gets the
// replies the same requests get one at a time, among them decisions queued
// by MULTI (their keys are copies, not the batch's bytes), an empty key,
// options, a wrong kind and commands that are not decisions.
func TestPrefetchedBatchRepliesAsUnbatched(t *testing.T) {
	var reqs []string
	for i := range 24 {
		reqs = append(reqs, respCmd("RL.SLIDE", "pb:"+strconv.Itoa(i%5), "3", "60"))
	}
	reqs = append(reqs,
		respCmd("RL.TOKEN", "pb:t", "5", "1", "1s"), respCmd("RL.SLIDE", "pb:t", "3", "60"),
		respCmd("CL.THROTTLE", "pb:c", "2", "1", "60"), respCmd("MULTI"), respCmd("RL.SLIDE", "pb:1", "3", "60"),
		respCmd("RL.SLIDE", "pb:m", "3", "60", "COST", "2"), respCmd("EXEC"), respCmd("RL.SLIDE", "", "3", "60"),
		respCmd("RL.SLIDE", "pb:2", "3", "60", "PEEK"), respCmd("PING"), respCmd("RL.SLIDE", "pb:m", "3", "60"),
		respCmd("rl.slide", "pb:3", "3", "60", "COST", "1"), respCmd("RL.FIXED", "pb:f", "3", "60"))
	at := time.Unix(1700000000, 0)
	_, batched := startServer(t, Config{Clock: newFakeClock(at).Now})
	_, single := startServer(t, Config{Clock: newFakeClock(at).Now})

	b := dialRaw(t, batched)
	b.send(t, strings.Join(reqs, "")+respCmd("ECHO", "end"))
	var got []string
	for l := b.line(t); l != "end"; l = b.line(t) {
		got = append(got, l)
	}
	got = got[:len(got)-1] // "$3" of "end"

	s := dialRaw(t, single)
	var want []string
	multi := false
	for i, r := range reqs {
		multi = multi && r != respCmd("EXEC") || r == respCmd("MULTI")
		if multi { // one line, +OK or +QUEUED; a marker would be queued too
			s.send(t, r)
			want = append(want, s.line(t))
			continue
		}
		mark := "m" + strconv.Itoa(i)
		s.send(t, r+respCmd("ECHO", mark))
		for l := s.line(t); l != mark; l = s.line(t) {
			want = append(want, l)
		}
		want = want[:len(want)-1]
	}
	assert.Equal(t, want, got)
}
