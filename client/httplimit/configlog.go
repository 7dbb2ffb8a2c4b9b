package httplimit

import (
	"sync"
	"time"
)

// configLogEvery is how often one configuration error is logged again.
const configLogEvery = time.Minute

// configLog decides when a configuration error is logged: each distinct
// message at once, a repeated one at most once per configLogEvery, so a
// misconfigured limiter stays loud without a line per request.
type configLog struct {
	mu   sync.Mutex           // guards last
	last map[string]time.Time // message → when it was last logged
}

func (c *configLog) due(msg string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t, ok := c.last[msg]; ok && now.Sub(t) < configLogEvery {
		return false
	}
	if c.last == nil || len(c.last) >= 64 { // bounded: forget old messages
		c.last = make(map[string]time.Time)
	}
	c.last[msg] = now
	return true
}
