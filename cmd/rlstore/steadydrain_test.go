package main

import (
	"context"
	"errors"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessSIGTERMUnderSteadyLoad stops a server while clients send
// request after request without pause. A draining connection is closed once
// the request in hand is answered, so the server exits 0 soon after the
// signal, rather than running its drain to the timeout (10 s) and exiting 1,
// as it did when it waited for a quiet gap between requests that never came.
func TestProcessSIGTERMUnderSteadyLoad(t *testing.T) {
	p := startProc(t, nil, "--port", "0")
	addr := p.Addr(t)
	const clients = 8
	var wg sync.WaitGroup
	started := make(chan struct{}, clients)
	errs := make(chan error, clients)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 1})
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			for i := 0; ; i++ {
				r, err := c.Do(ctx, "RL.SLIDE", "steady", 1_000_000_000, 60).Int64Slice()
				if err != nil {
					if i == 0 {
						errs <- err
					}
					return // the server closed the connection between two requests
				}
				if len(r) != 5 {
					errs <- errors.New("a partial reply")
					return
				}
				if i == 100 {
					started <- struct{}{}
				}
			}
		}()
	}
	for range clients {
		select {
		case <-started:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	sent := time.Now()
	p.Signal(t, syscall.SIGTERM)
	code := p.ExitCode(t)
	took := time.Since(sent)
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.Equal(t, 0, code, "exit code after SIGTERM under load")
	assert.Less(t, took, 5*time.Second, "the drain waited for a quiet gap")
	t.Logf("exited %v after SIGTERM", took.Round(time.Millisecond))
}
