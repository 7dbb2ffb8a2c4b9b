package server

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeReadsTheServersClock(t *testing.T) {
	clk := newFakeClock(time.Unix(1700000000, 123456789))
	_, addr := startServer(t, Config{Clock: clk.Now})
	c := newClient(t, addr, 3)
	got, err := c.Time(ctxT(t)).Result()
	require.NoError(t, err)
	assert.Equal(t, time.Unix(1700000000, 123456000), got, "microseconds, as Redis")
	clk.Add(time.Hour)
	assert.Equal(t, time.Unix(1700003600, 123456000), c.Time(ctxT(t)).Val())
}

func TestSaveWithoutPersistenceSaysSo(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	for _, cmd := range []string{"SAVE", "BGSAVE"} {
		assert.EqualError(t, c.Do(ctx, cmd).Err(), durable.ErrNoPersistence, cmd)
	}
	assert.EqualError(t, c.Do(ctx, "SHUTDOWN", "SAVE").Err(), durable.ErrNoPersistence)
	assert.EqualValues(t, 0, c.LastSave(ctx).Val(), "never saved")
	assert.NoError(t, c.Ping(ctx).Err(), "a refused SHUTDOWN SAVE leaves the server up")
}

func TestSaveBgSaveLastSave(t *testing.T) {
	var saves atomic.Int32
	fail := atomic.Bool{}
	save := func() error {
		saves.Add(1)
		if fail.Load() {
			return errors.New("disk full")
		}
		return nil
	}
	_, addr := startServer(t, Config{Durability: &fakeDurability{save: save}})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	require.Equal(t, "OK", c.Save(ctx).Val())
	assert.EqualValues(t, 1, saves.Load())
	assert.InDelta(t, time.Now().Unix(), c.LastSave(ctx).Val(), 5)

	require.Equal(t, "Background saving started", c.BgSave(ctx).Val())
	eventually(t, "the background save", func() bool { return saves.Load() == 2 })
	assert.EqualError(t, c.Do(ctx, "BGSAVE", "NOW").Err(), "ERR syntax error")

	fail.Store(true)
	assert.EqualError(t, c.Save(ctx).Err(), "ERR disk full")
	assert.Contains(t, c.Info(ctx, "persistence").Val(), "rl_persistence:enabled")
}

// startStoppable starts a server whose Serve the test watches: done receives its result.
func startStoppable(t *testing.T, cfg Config, extra ...command) (*Server, string, chan error) {
	t.Helper()
	s := newTestServer(t, cfg)
	s.register(extra)
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ready) }()
	t.Cleanup(func() { _ = s.Close() })
	select {
	case a := <-ready:
		return s, a.String(), done
	case err := <-done:
		t.Fatalf("serve: %v", err)
	}
	return nil, "", nil
}

// waitServe waits for Serve to return and returns its error.
func waitServe(t *testing.T, done chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(deadline):
		t.Fatal("Serve did not return")
	}
	return nil
}

func TestShutdownCommandStopsTheServer(t *testing.T) {
	for _, tt := range []struct {
		args      []string
		wantSaves int32
	}{
		{[]string{"SHUTDOWN"}, 1},
		{[]string{"shutdown", "save"}, 1},
		{[]string{"SHUTDOWN", "NOSAVE"}, 0},
		{[]string{"SHUTDOWN", "NOW", "FORCE", "NOSAVE"}, 0},
	} {
		var saves atomic.Int32
		_, addr, done := startStoppable(t, Config{Durability: &fakeDurability{save: func() error { saves.Add(1); return nil }}})
		c := dialRaw(t, addr)
		c.send(t, respCmd(tt.args...)+respCmd("PING"))
		assert.True(t, c.closedByServer(t), "%v closes without a reply", tt.args)
		require.NoError(t, waitServe(t, done), "%v", tt.args)
		assert.Equal(t, tt.wantSaves, saves.Load(), "%v", tt.args)
		_, err := net.Dial("tcp", addr)
		assert.Error(t, err, "nothing listens after %v", tt.args)
	}
}

func TestShutdownCommandErrors(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	assert.EqualError(t, c.Do(ctx, "SHUTDOWN", "LATER").Err(), "ERR syntax error")
	assert.EqualError(t, c.Do(ctx, "SHUTDOWN", "ABORT").Err(), "ERR No shutdown in progress.")
	assert.NoError(t, c.Ping(ctx).Err())
}

// TestShutdownSaveAndNoSaveIsASyntaxError checks that conflicting options are
// refused, as Redis 7 refuses them, instead of shutting down without a save.
func TestShutdownSaveAndNoSaveIsASyntaxError(t *testing.T) {
	var saves atomic.Int32
	_, addr := startServer(t, Config{Durability: &fakeDurability{save: func() error { saves.Add(1); return nil }}})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	for _, args := range [][]any{{"SHUTDOWN", "SAVE", "NOSAVE"}, {"shutdown", "nosave", "save"}} {
		assert.EqualError(t, c.Do(ctx, args...).Err(), "ERR syntax error", "%v", args)
	}
	assert.NoError(t, c.Ping(ctx).Err(), "the server is still up")
	assert.Zero(t, saves.Load())
}

// TestServeReturnsTheSaveError checks a failed save on the way out reaches
// Serve's caller, so that the process can exit non-zero.
func TestServeReturnsTheSaveError(t *testing.T) {
	_, addr, done := startStoppable(t, Config{Durability: &fakeDurability{save: func() error { return errors.New("disk full") }}})
	c := dialRaw(t, addr)
	c.send(t, respCmd("SHUTDOWN"))
	assert.ErrorContains(t, waitServe(t, done), "disk full")
}
