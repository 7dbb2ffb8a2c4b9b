package main

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// linkHealth samples, from each region process's own INFO regions, whether
// all its links are up and acknowledging: a region's usage of a window
// says something about the escrow only while its links carry exchanges
// in time. On a loaded host a process can be starved for a second, and
// then the escrow rightly holds it back.
type linkHealth struct {
	mu      sync.Mutex
	samples []healthSample
}

type healthSample struct {
	at      time.Time
	healthy bool // every link of every region up, its newest acknowledged batch at most maxLag old
}

var linkLine = regexp.MustCompile(`(?m)^rl_region\d+:name=[^,]+,addr=[^,]+,state=(\w+),lag_ms=(-?\d+),`)

// sample runs until ctx ends, every interval: one sample over all clients.
func (h *linkHealth) sample(ctx context.Context, clients []*redis.Client, interval, maxLag time.Duration) {
	for ctx.Err() == nil {
		healthy := true
		for _, c := range clients {
			info, err := c.Info(ctx, "regions").Result()
			links := linkLine.FindAllStringSubmatch(info, -1)
			healthy = healthy && err == nil && len(links) == len(clients)-1
			for _, m := range links {
				lag, _ := strconv.Atoi(m[2])
				healthy = healthy && m[1] == "up" && time.Duration(lag)*time.Millisecond <= maxLag
			}
		}
		h.mu.Lock()
		h.samples = append(h.samples, healthSample{time.Now(), healthy})
		h.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(interval): // the sampling pace, not an ordering
		}
	}
}

// throughout reports whether every sample in [from, to) was healthy, and
// there were at least min of them (a sampler starved too says nothing).
func (h *linkHealth) throughout(from, to time.Time, min int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.samples {
		if !s.at.Before(from) && s.at.Before(to) {
			if !s.healthy {
				return false
			}
			n++
		}
	}
	return n >= min
}
