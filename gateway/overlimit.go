package gateway

import (
	"time"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlstore/rlstore/gateway/batch"
)

// windowEnd is the end of the epoch-aligned counting window of r at now,
// in unix seconds, or 0 for a window the cache cannot hold.
func windowEnd(r *batch.Request, now time.Time) int64 {
	sec := int64(r.Window / time.Second)
	if r.Kind != batch.Count || sec <= 0 {
		return 0
	}
	return (now.Unix()/sec + 1) * sec
}

// overCached takes the descriptors the local over-limit cache knows are
// over out of the call's requests (their check becomes cachedOver), and
// reports whether there was any.
func (s *Service) overCached(sc *scratch, checks []check, now time.Time) bool {
	if s.over == nil {
		return false
	}
	reqs, n, cached := sc.reqs, 0, false
	for i := range checks {
		c := &checks[i]
		if c.req < 0 {
			continue
		}
		r := &reqs[c.req]
		if end := windowEnd(r, now); end != 0 && s.over.over(r.Key, end, uint64(r.Limit)) {
			c.req, cached = cachedOver, true
			continue
		}
		reqs[n] = *r
		c.req = n
		n++
	}
	sc.reqs = reqs[:n]
	return cached
}

// rememberOver puts the counting windows the store found over their
// limit into the local over-limit cache.
func (s *Service) rememberOver(checks []check, reqs []batch.Request, out []batch.Result, now time.Time) {
	if s.over == nil {
		return
	}
	for i := range checks {
		c := &checks[i]
		if c.req < 0 {
			continue
		}
		r := &reqs[c.req]
		if end := windowEnd(r, now); end != 0 && out[c.req].Count > r.Limit {
			s.over.add(r.Key, end, uint64(out[c.req].Count))
		}
	}
}

// checkOnly makes every counting request ask without counting.
func checkOnly(reqs []batch.Request) {
	for i := range reqs {
		if reqs[i].Kind == batch.Count {
			reqs[i].Hits = 0
		}
	}
}

// cachedStatus is the answer of a descriptor the local cache knows is
// over: OVER_LIMIT, nothing left, every hit over (shadow mode lets it
// pass), as the reference's base limiter answers it.
func (s *Service) cachedStatus(b *statusBlock, c *check, now time.Time) {
	l := c.limit
	st := &b.st
	b.lim.RequestsPerUnit, b.lim.Unit, b.lim.Name = l.RequestsPerUnit, pb.RateLimitResponse_RateLimit_Unit(l.Unit), l.Name
	st.CurrentLimit = &b.lim
	st.DurationUntilReset = s.reset(&b.dur, batch.Request{Kind: batch.Count, Window: window(l)}, batch.Result{}, now)
	st.Code = pb.RateLimitResponse_OVER_LIMIT
	m := c.metric
	m.overLimit.Add(c.hits)
	m.overLimitLocalCache.Add(c.hits)
	if l.ShadowMode {
		st.Code = pb.RateLimitResponse_OK
		m.shadowMode.Add(c.hits)
	}
}
