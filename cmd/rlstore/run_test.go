package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeServer is a stopper whose Shutdown blocks until the test releases it or ctx ends.
type fakeServer struct {
	shutdown chan struct{} // closed when Shutdown is called
	release  chan error    // what Shutdown returns
	closed   chan struct{} // closed when Close is called
}

func newFakeServer() *fakeServer {
	return &fakeServer{shutdown: make(chan struct{}), release: make(chan error, 1), closed: make(chan struct{})}
}

func (f *fakeServer) Shutdown(ctx context.Context) error {
	close(f.shutdown)
	select {
	case err := <-f.release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeServer) Close() error { close(f.closed); return nil }

// stop runs waitForStop in a goroutine and returns its result channel.
func stop(f *fakeServer, done <-chan error, sigs <-chan os.Signal, timeout time.Duration) <-chan error {
	res := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	go func() { res <- waitForStop(f, done, sigs, timeout, log) }()
	return res
}

func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func result(t *testing.T, res <-chan error) error {
	t.Helper()
	select {
	case err := <-res:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("waitForStop did not return")
		return nil
	}
}

func TestSignalDrains(t *testing.T) {
	f, done, sigs := newFakeServer(), make(chan error, 1), make(chan os.Signal, 2)
	res := stop(f, done, sigs, time.Minute)
	sigs <- syscall.SIGTERM
	wait(t, f.shutdown, "Shutdown")
	f.release <- nil
	done <- nil // Serve returns once Shutdown has closed the server
	require.NoError(t, result(t, res))
	select {
	case <-f.closed:
		t.Error("Close called after a drain that finished")
	default:
	}
}

func TestSecondSignalExitsAtOnce(t *testing.T) {
	f, sigs := newFakeServer(), make(chan os.Signal, 2)
	res := stop(f, make(chan error), sigs, time.Hour)
	sigs <- syscall.SIGINT
	wait(t, f.shutdown, "Shutdown")
	sigs <- syscall.SIGINT
	assert.ErrorContains(t, result(t, res), "second signal")
}

// TestSecondSIGTERMIsIgnored: GNU timeout sends SIGTERM twice (to the
// process, then its group); the drain goes on, as in Redis. SIGINT still
// forces the exit.
func TestSecondSIGTERMIsIgnored(t *testing.T) {
	f, sigs := newFakeServer(), make(chan os.Signal, 2)
	res := stop(f, make(chan error), sigs, time.Hour)
	sigs <- syscall.SIGTERM
	wait(t, f.shutdown, "Shutdown")
	sigs <- syscall.SIGTERM
	sigs <- syscall.SIGTERM
	select {
	case err := <-res:
		t.Fatalf("a second SIGTERM ended the drain: %v", err)
	default:
	}
	sigs <- syscall.SIGINT
	assert.ErrorContains(t, result(t, res), "second signal (interrupt)")
}

func TestDrainTimeoutCloses(t *testing.T) {
	f, sigs := newFakeServer(), make(chan os.Signal, 2)
	res := stop(f, make(chan error), sigs, time.Millisecond)
	sigs <- syscall.SIGTERM
	err := result(t, res)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	wait(t, f.closed, "Close after the drain timed out")
}

func TestServerStopsByItself(t *testing.T) {
	f, done := newFakeServer(), make(chan error, 1)
	res := stop(f, done, make(chan os.Signal), time.Minute)
	boom := errors.New("boom")
	done <- boom
	assert.ErrorIs(t, result(t, res), boom)
}

func TestRunBadFlagsExit2(t *testing.T) {
	var out rlstoretest.SyncBuffer
	code := run([]string{"--bind", "0.0.0.0"}, env(nil), io.Discard, &out, nil)
	assert.Equal(t, 2, code)
	assert.Contains(t, out.String(), "rlstore: protected mode: refusing to listen on 0.0.0.0")
	var help rlstoretest.SyncBuffer
	assert.Equal(t, 0, run([]string{"--help"}, env(nil), &help, io.Discard, nil))
	assert.Contains(t, help.String(), "--port port")
}
