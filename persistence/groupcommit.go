package persistence

import "sync"

// groupCommit runs one flush for any number of concurrent callers: a caller
// waits for a flush that started after it called, and whoever finds none
// running starts one for everyone waiting.
type groupCommit struct {
	flush   func(sync bool) error
	mu      sync.Mutex
	cond    sync.Cond
	started uint64 // flushes started
	done    uint64 // the number of the last flush finished
	running bool
	err     error // the last flush's error
}

// commit returns once a flush that began after the call has finished.
func (g *groupCommit) commit(sync bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond.L == nil {
		g.cond.L = &g.mu
	}
	target := g.started + 1
	for g.done < target {
		if g.running {
			g.cond.Wait()
			continue
		}
		g.running = true
		g.started++
		n := g.started
		g.mu.Unlock()
		err := g.flush(sync)
		g.mu.Lock()
		g.running, g.done, g.err = false, n, err
		g.cond.Broadcast()
	}
	return g.err
}
