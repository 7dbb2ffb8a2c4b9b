package main

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThreadsSetting(t *testing.T) {
	var s threadsSetting
	require.NoError(t, s.Set("3"))
	assert.Equal(t, "3", s.String())
	require.NoError(t, s.Set("auto"))
	assert.Equal(t, "auto", s.String())
	require.NoError(t, s.Set("all"))
	assert.Equal(t, "all", s.String())
	def := defaultConfig()
	assert.Equal(t, "all", def.ServerThreads.String(), "Go's default unless told")
	for _, bad := range []string{"0", "-1", "two", "1025", ""} {
		assert.Error(t, s.Set(bad), bad)
	}
}

// host feeds a threadTuner samples of a host with cores cores, each one
// second after the last, in which other processes kept others cores busy
// and rlstore self cores.
type host struct {
	t     *testing.T
	cores float64
	s     cpuSample
}

const ticksPerCore = 100 // /proc/stat's ticks in a second

func (h *host) after(others, self float64) cpuSample {
	h.s.hostAll += uint64(h.cores * ticksPerCore)
	h.s.hostBusy += uint64((others + self) * ticksPerCore)
	h.s.self += time.Duration(self * float64(time.Second))
	h.s.at = h.s.at.Add(time.Second)
	return h.s
}

func newHost(t *testing.T, cores float64) *host {
	return &host{t: t, cores: cores, s: cpuSample{at: time.Unix(1000, 0)}}
}

// TestThreadTunerFollowsFreeCores checks that auto runs on the cores the
// other processes leave free, and on all of them again once they stop.
func TestThreadTunerFollowsFreeCores(t *testing.T) {
	h := newHost(t, 2)
	tu := newThreadTuner(2, 2, h.s)
	assert.Equal(t, 2, tu.next(h.after(0, 1.8)), "alone on the host, rlstore keeps every core")
	assert.Equal(t, 2, tu.next(h.after(0.1, 1.9)))
	assert.Equal(t, 2, tu.next(h.after(1.0, 1.0)), "one interval's blip is smoothed away")
	assert.Equal(t, 1, tu.next(h.after(1.0, 1.0)), "a load generator that keeps a core busy leaves one")
	assert.Equal(t, 1, tu.next(h.after(1.0, 0.9)))
	assert.Equal(t, 2, tu.next(h.after(0, 0.5)), "back to every core once the others stop")
}

// TestThreadTunerHolds checks the dead band: the threads move only when the
// free cores differ from them by half a core or more.
func TestThreadTunerHolds(t *testing.T) {
	h := newHost(t, 2)
	tu := newThreadTuner(2, 2, h.s)
	for i := 0; i < 10; i++ {
		assert.Equal(t, 2, tu.next(h.after([]float64{0.3, 0.45}[i%2], 1.5)), "1.55-1.7 cores free: stays at 2")
	}
	tu.next(h.after(1, 1))
	tu.next(h.after(1, 1))
	require.Equal(t, 1, tu.cur)
	for i := 0; i < 10; i++ {
		assert.Equal(t, 1, tu.next(h.after([]float64{0.7, 0.9}[i%2], 1)), "1.1-1.3 cores free: stays at 1")
	}
}

// TestThreadTunerBounds checks that auto never goes past Go's default nor
// below one thread, and ignores a sample that goes backwards.
func TestThreadTunerBounds(t *testing.T) {
	h := newHost(t, 8)
	tu := newThreadTuner(8, 4, h.s)
	assert.Equal(t, 4, tu.next(h.after(0, 4)), "no more than the process may use")
	for i := 0; i < 10; i++ {
		tu.next(h.after(7.9, 0.1))
	}
	assert.Equal(t, 1, tu.cur, "at least one")
	back := h.s
	back.hostAll -= 10
	assert.Equal(t, 1, tu.next(back), "a sample from before the last is ignored")
}

func TestParseProcStat(t *testing.T) {
	s, cores, err := parseProcStat("cpu  100 5 50 1000 20 3 7 2 40 0\ncpu0 50 2 25 500 10 1 3 1 20 0\ncpu1 50 3 25 500 10 2 4 1 20 0\nintr 12345\n")
	require.NoError(t, err)
	assert.Equal(t, 2.0, cores)
	assert.Equal(t, uint64(100+5+50+3+7+2), s.hostBusy, "guest time is inside user already")
	assert.Equal(t, uint64(100+5+50+3+7+2+1000+20), s.hostAll)
	for _, bad := range []string{"", "intr 1\n", "cpu 1 2 3\ncpu0 1 2 3 4 5 6 7 8\n", "cpu a b c d e f g h\ncpu0 1\n"} {
		_, _, err := parseProcStat(bad)
		assert.Error(t, err, "%q", bad)
	}
}

// TestStartThreadsFixedAndEnvironment checks that a number sets GOMAXPROCS,
// and that auto leaves an operator's GOMAXPROCS alone.
func TestStartThreadsFixedAndEnvironment(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startThreads(ctx, 1, env(nil), log)
	assert.Equal(t, 1, runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(was)
	startThreads(ctx, threadsAuto, env(map[string]string{"GOMAXPROCS": "3"}), log)
	assert.Equal(t, was, runtime.GOMAXPROCS(0), "the environment's GOMAXPROCS wins over auto")
	startThreads(ctx, threadsAll, env(nil), log)
	assert.Equal(t, was, runtime.GOMAXPROCS(0), "all leaves Go's default")
}

// TestProcessServerThreads checks the flag end to end: INFO reports the
// threads it set.
func TestProcessServerThreads(t *testing.T) {
	p := startProc(t, nil, "--port", "0", "--server-threads", "1")
	c := newClient(t, p.Addr(t))
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	require.NoError(t, err)
	assert.Contains(t, info, "rl_server_threads:1\r\n")
}
