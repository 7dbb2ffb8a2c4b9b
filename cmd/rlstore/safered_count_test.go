package main

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// countLimit is the counting keys' limit: never reached in a run, so every
// request is admitted, and each reply's remaining field tells the count
// the deciding node held. Two admissions that report the same remaining
// saw the same state: the second node decided from a state without the
// first's decision (a takeover from a copy one shipment old, or two nodes
// serving the key at once).
const countLimit = 1_000_000

// countLoad asks every node about every counting key each round and
// keeps, per key, each admission's remaining.
type countLoad struct {
	mu     sync.Mutex
	seen   map[string]map[int64][]string // key → remaining → "node@seconds" of each admission
	admits map[string]int
	errs   map[string]int
	start  time.Time
}

func newCountLoad(start time.Time) *countLoad {
	return &countLoad{seen: map[string]map[int64][]string{}, admits: map[string]int{}, errs: map[string]int{}, start: start}
}

func (l *countLoad) run(ctx context.Context, cs []*redis.Client, keys []string, stop <-chan struct{}) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				for _, k := range keys {
					if closed(stop) {
						return
					}
					rep, err := c.Do(ctx, "RL.SLIDE", k, countLimit, 3600).Int64Slice()
					l.note(i, k, rep, err)
				}
			}
		}()
	}
	return &wg
}

func (l *countLoad) note(node int, k string, rep []int64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		l.errs[firstWord(err.Error())]++
	case rep[0] == 1:
		l.admits[k]++
		if l.seen[k] == nil {
			l.seen[k] = map[int64][]string{}
		}
		l.seen[k][rep[2]] = append(l.seen[k][rep[2]], fmt.Sprintf("%d@%.2f", node, time.Since(l.start).Seconds()))
	}
}

// countResult is what the counting keys show at the end of a run.
type countResult struct {
	dups    int // admissions that reported a remaining another admission had reported
	lost    int // admissions the key's final count lacks
	maxLost int // the most of one key
}

// report reads each key's final count from the node c asks (a peek) and
// logs the keys whose admissions forked.
func (l *countLoad) report(t *testing.T, c *redis.Client, keys []string) countResult {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var res countResult
	for _, k := range keys {
		rep, err := c.Do(context.Background(), "RL.SLIDE", k, countLimit, 3600, "PEEK").Int64Slice()
		final := -1
		if err == nil {
			final = countLimit - int(rep[2]) - 1 // a peek's remaining is what would remain after it
		}
		var dups []string
		var rems []int64
		for rem, by := range l.seen[k] {
			if len(by) > 1 {
				rems = append(rems, rem)
			}
		}
		sort.Slice(rems, func(i, j int) bool { return rems[i] > rems[j] })
		for _, rem := range rems {
			res.dups += len(l.seen[k][rem]) - 1
			dups = append(dups, fmt.Sprintf("%d:%v", countLimit-rem, l.seen[k][rem]))
		}
		lost := l.admits[k] - final
		if final >= 0 {
			res.lost += max(lost, 0)
			res.maxLost = max(res.maxLost, lost)
		}
		if len(dups) > 0 || lost != 0 {
			t.Logf("counting key %s: %d admitted, final count %d (err %v); counts reported twice: %v", k, l.admits[k], final, err, dups)
		}
	}
	t.Logf("counting keys: %d admissions reported a count already reported, %d admissions missing from the final counts; errors %v", res.dups, res.lost, l.errs)
	return res
}
