// Package gateway serves Envoy's rate limit service (envoy.service.ratelimit.v3) over gRPC, deciding through rlstore's own decision path.
package gateway

import (
	"context"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlstore/rlstore/gateway/batch"
	"github.com/rlstore/rlstore/gateway/rlsconfig"
)

// Errors of ShouldRateLimit, in envoyproxy/ratelimit's words.
const (
	errNoDomain      = "rate limit domain must not be empty"
	errNoDescriptors = "rate limit descriptor list must not be empty"
	errNoConfig      = "no rate limit configuration loaded"
)

// Defaults of Options.
const (
	DefaultNearLimitRatio = 0.8 // envoyproxy/ratelimit's NEAR_LIMIT_RATIO
	DefaultKeyPrefix      = "rls:"
)

// Options are the service's settings; the zero value is envoyproxy/ratelimit's defaults.
type Options struct {
	GlobalShadowMode bool    // every OVER_LIMIT answer becomes OK (SHADOW_MODE)
	GlobalQuotaMode  bool    // every descriptor is in quota mode
	ResponseHeaders  bool    // add RateLimit-Limit, -Remaining and -Reset (LIMIT_RESPONSE_HEADERS_ENABLED)
	NearLimitRatio   float32 // default DefaultNearLimitRatio
	KeyPrefix        string  // of the store keys; default DefaultKeyPrefix
	MaxSeries        int     // most per-descriptor metric series; default DefaultMaxSeries
	Clock            func() time.Time

	// StopIncrementWhenOverLimit: a call that would take a fixed-window
	// descriptor over its limit counts its hits on those descriptors
	// only (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT).
	StopIncrementWhenOverLimit bool

	// ResponseDynamicMetadata: each answer carries the request and the
	// passing limits' `metadata` as dynamic metadata (RESPONSE_DYNAMIC_METADATA).
	ResponseDynamicMetadata bool

	// LocalCacheBytes sizes the local over-limit cache
	// (LOCAL_CACHE_SIZE_IN_BYTES): 0 is none.
	LocalCacheBytes int
}

// Service is the rate limit service: ShouldRateLimit against the
// configuration in force, decided by a batch.Decider. Its methods are safe
// for concurrent use; SetConfig swaps the configuration for calls that
// start after it.
type Service struct {
	pb.UnimplementedRateLimitServiceServer
	decider batch.Decider
	opts    Options
	cfg     atomic.Pointer[rlsconfig.Config]
	scratch sync.Pool  // of *scratch
	over    *overCache // nil without Options.LocalCacheBytes
	Stats   *Stats
}

// NewService returns a service with no configuration: until SetConfig,
// every call fails as envoyproxy/ratelimit's does before its first load.
func NewService(d batch.Decider, opts Options) *Service {
	if opts.NearLimitRatio == 0 {
		opts.NearLimitRatio = DefaultNearLimitRatio
	}
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultKeyPrefix
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Service{decider: d, opts: opts, Stats: newStats(opts.MaxSeries), over: newOverCache(opts.LocalCacheBytes)}
}

// SetConfig puts c in force.
func (s *Service) SetConfig(c *rlsconfig.Config) { s.cfg.Store(c) }

// Config is the configuration in force, or nil.
func (s *Service) Config() *rlsconfig.Config { return s.cfg.Load() }

// check is one descriptor's part of a call.
type check struct {
	limit     *rlsconfig.RateLimit
	share     []string // share_threshold: the wildcard patterns that replace values in the store key
	metric    *counters
	hits      uint64
	unlimited bool
	req       int // its index in the batch, or noRequest or alwaysOver
}

// check.req when the store is not asked.
const (
	noRequest  = -1 // no limit applies
	alwaysOver = -2 // an rlstore algorithm with requests_per_unit 0: nothing is admitted
	cachedOver = -3 // the local over-limit cache knows it is over
)

// ShouldRateLimit implements envoy.service.ratelimit.v3.RateLimitService.
func (s *Service) ShouldRateLimit(ctx context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	sc := s.getScratch()
	defer s.putScratch(sc)
	resp, err := s.shouldRateLimit(ctx, req, sc, nil)
	if err != nil {
		s.Stats.serviceErrors.Add(1)
	}
	return resp, err
}

// appendShouldRateLimit is ShouldRateLimit with its answer appended to
// dst as one gRPC message (the 5-byte prefix, then the protobuf
// RateLimitResponse), as the lean loop sends it. The answer is built in
// the call's pooled scratch and written out before the scratch goes
// back, so that the usual answer allocates nothing.
func (s *Service) appendShouldRateLimit(dst []byte, ctx context.Context, req *pb.RateLimitRequest) ([]byte, error) {
	sc := s.getScratch()
	defer s.putScratch(sc)
	resp, err := s.shouldRateLimit(ctx, req, sc, &sc.ans)
	if err != nil {
		s.Stats.serviceErrors.Add(1)
		return dst, err
	}
	return appendGRPCMessage(dst, resp)
}

// shouldRateLimit decides a call with sc's memory; its answer is built in
// ans, or, with ans nil, allocated to outlive the call.
func (s *Service) shouldRateLimit(ctx context.Context, req *pb.RateLimitRequest, sc *scratch, ans *answerStore) (*pb.RateLimitResponse, error) {
	switch {
	case req.GetDomain() == "":
		return nil, status.Error(codes.Unknown, errNoDomain)
	case len(req.GetDescriptors()) == 0:
		return nil, status.Error(codes.Unknown, errNoDescriptors)
	}
	cfg := s.cfg.Load()
	if cfg == nil {
		return nil, status.Error(codes.Unknown, errNoConfig)
	}
	now := s.opts.Clock()
	s.match(sc, cfg, req)
	checks := sc.checks
	for i := range checks {
		c := &checks[i]
		c.req = noRequest
		if c.limit == nil {
			continue
		}
		c.metric.totalHits.Add(c.hits)
		if c.limit.Algorithm != rlsconfig.Counter && c.limit.RequestsPerUnit == 0 {
			c.req = alwaysOver
			continue
		}
		c.req = len(sc.reqs)
		sc.reqs = append(sc.reqs, s.request(sc, req, i, c))
	}
	sc.setKeys()
	cached := s.overCached(sc, checks, now)
	reqs := sc.reqs
	sc.out = append(sc.out[:0], make([]batch.Result, len(reqs))...)
	out := sc.out
	switch {
	case s.opts.StopIncrementWhenOverLimit && cached:
		checkOnly(reqs) // the reference counts nothing once a descriptor is over in its cache
	case s.opts.StopIncrementWhenOverLimit:
		if err := s.stopIncrement(ctx, checks, reqs, out); err != nil {
			return nil, err
		}
	}
	if err := s.decide(ctx, reqs, out); err != nil {
		return nil, err
	}
	s.rememberOver(checks, reqs, out, now)
	resp := s.respond(checks, reqs, out, now, ans)
	if s.opts.ResponseDynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, checks, resp)
	}
	return resp, nil
}

// decide asks the store, and fails the call if any request failed.
func (s *Service) decide(ctx context.Context, reqs []batch.Request, out []batch.Result) error {
	if len(reqs) == 0 {
		return nil
	}
	if err := s.decider.Decide(ctx, reqs, out); err != nil {
		return status.Error(codes.Unavailable, "rlstore: "+err.Error())
	}
	for _, r := range out {
		if r.Err != nil {
			return status.Error(codes.Unavailable, "rlstore: "+r.Err.Error())
		}
	}
	return nil
}

// stopIncrement is envoyproxy/ratelimit's
// STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT: the fixed-window counts are
// read first (a round trip of its own, as there); if the call would take
// any over its limit, only those count its hits, and the call's other
// fixed-window descriptors are asked without counting. rlstore's own
// algorithms never count a denied request, and are left as they are.
func (s *Service) stopIncrement(ctx context.Context, checks []check, reqs []batch.Request, out []batch.Result) error {
	hits := make([]int64, len(reqs)) // the calls's own hits
	for i := range reqs {
		hits[i] = reqs[i].Hits
		if reqs[i].Kind == batch.Count {
			reqs[i].Hits = 0
		}
	}
	if err := s.decide(ctx, reqs, out); err != nil {
		return err
	}
	over := make([]bool, len(reqs))
	anyOver := false
	for i := range checks {
		c := &checks[i]
		if c.req < 0 || reqs[c.req].Kind != batch.Count {
			continue
		}
		over[c.req] = uint64(out[c.req].Count)+c.hits > uint64(c.limit.RequestsPerUnit)
		anyOver = anyOver || over[c.req]
	}
	for i := range reqs {
		if reqs[i].Kind == batch.Count && (!anyOver || over[i]) {
			reqs[i].Hits = hits[i]
		}
	}
	return nil
}

// match finds each descriptor's limit, then drops those another one
// replaces, as envoyproxy/ratelimit's constructLimitsToCheck does.
func (s *Service) match(sc *scratch, cfg *rlsconfig.Config, req *pb.RateLimitRequest) {
	descs := req.GetDescriptors()
	sc.checks = append(sc.checks[:0], make([]check, len(descs))...)
	checks := sc.checks
	var replacing map[string]bool
	for i, d := range descs {
		c := &checks[i]
		c.hits = hitsAddend(req, d)
		lim, key, share := s.lookup(cfg, req.GetDomain(), d)
		if lim == nil {
			continue
		}
		for _, r := range lim.Replaces {
			if replacing == nil {
				replacing = map[string]bool{}
			}
			replacing[r] = true
		}
		if lim.Unlimited {
			c.unlimited = true
			continue
		}
		c.limit, c.share, c.metric = lim, share, s.Stats.series(req.GetDomain(), key)
	}
	for i := range checks {
		if l := checks[i].limit; l != nil && l.Name != "" && replacing[l.Name] {
			checks[i].limit = nil
		}
	}
}

// lookup returns d's limit, stats key and share_threshold patterns: the override Envoy sent with it,
// or what it matches in the configuration.
func (s *Service) lookup(cfg *rlsconfig.Config, domain string, d *pbstruct.RateLimitDescriptor) (*rlsconfig.RateLimit, string, []string) {
	if !cfg.HasDomain(domain) {
		s.Stats.unknownDomain.Add(1)
		return nil, "", nil
	}
	if o := d.GetLimit(); o != nil {
		key := overrideKey(domain, d)
		return &rlsconfig.RateLimit{FullKey: key, RequestsPerUnit: o.GetRequestsPerUnit(), Unit: rlsconfig.Unit(o.GetUnit())}, key, nil
	}
	var buf [8]rlsconfig.Entry // on the stack for the usual descriptor
	entries := buf[:0]
	for _, e := range d.GetEntries() {
		entries = append(entries, rlsconfig.Entry{Key: e.GetKey(), Value: e.GetValue()})
	}
	m, _ := cfg.Lookup(domain, entries)
	if m.Limit == nil {
		return nil, "", nil
	}
	return m.Limit, m.MetricKey, m.Share
}

// hitsAddend is a descriptor's hits: its own hits_addend if set (0 asks
// without counting), else the request's, where 0 means 1.
func hitsAddend(req *pb.RateLimitRequest, d *pbstruct.RateLimitDescriptor) uint64 {
	if h := d.GetHitsAddend(); h != nil {
		return h.GetValue()
	}
	return max(1, uint64(req.GetHitsAddend()))
}

// overrideKey is envoyproxy/ratelimit's stats key of a descriptor that
// carries its own limit: domain.key_value.key….
func overrideKey(domain string, d *pbstruct.RateLimitDescriptor) string {
	b := []byte(domain)
	for _, e := range d.GetEntries() {
		b = append(b, '.')
		b = append(b, e.GetKey()...)
		if e.GetValue() != "" {
			b = append(b, '_')
			b = append(b, e.GetValue()...)
		}
	}
	return string(b)
}

// maxHits bounds one request's charge, far above any limit (requests_per_unit is 32 bits).
const maxHits = 1 << 40

// request is the store request of descriptor i.
func (s *Service) request(sc *scratch, req *pb.RateLimitRequest, i int, c *check) batch.Request {
	sc.keys = s.appendStoreKey(sc.keys, req.GetDomain(), req.GetDescriptors()[i], c)
	sc.keyEnds = append(sc.keyEnds, len(sc.keys))
	return batch.Request{
		Kind:   kindOf(c.limit.Algorithm),
		Limit:  int64(c.limit.RequestsPerUnit),
		Window: window(c.limit),
		Hits:   int64(min(c.hits, maxHits)),
	}
}

func window(l *rlsconfig.RateLimit) time.Duration {
	return time.Duration(l.Unit.Seconds()) * time.Second
}

func kindOf(a rlsconfig.Algorithm) batch.Kind {
	return [...]batch.Kind{rlsconfig.Counter: batch.Count, rlsconfig.Fixed: batch.Fixed, rlsconfig.Slide: batch.Slide,
		rlsconfig.Token: batch.Token, rlsconfig.Log: batch.Log, rlsconfig.Leaky: batch.Leaky}[a]
}

// respond builds the answer from the store's results.
func (s *Service) respond(checks []check, reqs []batch.Request, out []batch.Result, now time.Time, ans *answerStore) *pb.RateLimitResponse {
	var resp *pb.RateLimitResponse
	var blocks []statusBlock
	if ans != nil {
		resp, blocks = ans.response(len(checks))
	} else {
		resp, blocks = newResponse(len(checks))
	}
	minRemaining := uint32(math.MaxUint32)
	var minStatus *pb.RateLimitResponse_DescriptorStatus
	failedRate, failedQuota, totalQuota := 0, 0, 0
	for i := range checks {
		c, b := &checks[i], &blocks[i]
		st := &b.st
		resp.Statuses[i] = st
		st.Code = pb.RateLimitResponse_OK
		if c.unlimited {
			st.LimitRemaining = math.MaxUint32
			continue
		}
		switch {
		case c.req >= 0:
			s.status(b, c, reqs[c.req], out[c.req], now)
		case c.req == alwaysOver:
			s.status(b, c, batch.Request{Kind: kindOf(c.limit.Algorithm), Window: window(c.limit), Hits: int64(c.hits)}, batch.Result{}, now)
		case c.req == cachedOver:
			s.cachedStatus(b, c, now)
		}
		if s.opts.ResponseHeaders && st.CurrentLimit != nil && st.LimitRemaining < minRemaining {
			minStatus, minRemaining = st, st.LimitRemaining
		}
		quota := s.opts.GlobalQuotaMode || (c.limit != nil && c.limit.QuotaMode)
		if quota {
			totalQuota++
		}
		if st.Code != pb.RateLimitResponse_OVER_LIMIT {
			continue
		}
		if quota {
			failedQuota++
		} else {
			failedRate++
			minStatus, minRemaining = st, 0
		}
	}
	resp.OverallCode = pb.RateLimitResponse_OK
	if failedRate > 0 || (totalQuota > 0 && totalQuota == failedQuota) {
		resp.OverallCode = pb.RateLimitResponse_OVER_LIMIT
	}
	if s.opts.ResponseHeaders && minStatus != nil {
		resp.ResponseHeadersToAdd = headers(minStatus)
	}
	if resp.OverallCode == pb.RateLimitResponse_OVER_LIMIT && s.opts.GlobalShadowMode {
		resp.OverallCode = pb.RateLimitResponse_OK
		s.Stats.globalShadow.Add(1)
	}
	return resp
}

// status fills one limited descriptor's answer into b, with its stats
// counted as envoyproxy/ratelimit's base limiter counts them.
func (s *Service) status(b *statusBlock, c *check, r batch.Request, res batch.Result, now time.Time) {
	l := c.limit
	limit := uint64(l.RequestsPerUnit)
	after, over := s.count(r, res)
	before := after - min(after, c.hits)
	near := uint64(math.Floor(float64(float32(limit) * s.opts.NearLimitRatio)))
	st := &b.st
	b.lim.RequestsPerUnit, b.lim.Unit, b.lim.Name = l.RequestsPerUnit, pb.RateLimitResponse_RateLimit_Unit(l.Unit), l.Name
	st.CurrentLimit = &b.lim
	st.DurationUntilReset = s.reset(&b.dur, r, res, now)
	m := c.metric
	if over {
		st.Code = pb.RateLimitResponse_OVER_LIMIT
		if before >= limit {
			m.overLimit.Add(c.hits)
		} else {
			m.overLimit.Add(after - limit)
			m.nearLimit.Add(limit - max(near, before))
		}
		if l.ShadowMode {
			st.Code = pb.RateLimitResponse_OK
			if before >= limit {
				m.shadowMode.Add(c.hits)
			} else {
				m.shadowMode.Add(after - limit)
			}
		}
		return
	}
	st.LimitRemaining = uint32(min(limit-min(after, limit), math.MaxUint32))
	if r.Kind != batch.Count {
		st.LimitRemaining = uint32(min(max(res.Remaining, 0), math.MaxUint32))
	}
	if after > near {
		if before >= near {
			m.nearLimit.Add(c.hits)
		} else {
			m.nearLimit.Add(after - near)
		}
	}
	m.withinLimit.Add(c.hits)
}

// count is the units in the window after the request, and whether it is
// over the limit. For rlstore's algorithms a denied request is not
// counted: its "after" is where it would have taken the count.
func (s *Service) count(r batch.Request, res batch.Result) (uint64, bool) {
	if r.Kind == batch.Count {
		after := uint64(max(res.Count, 0))
		return after, after > uint64(r.Limit)
	}
	used := uint64(max(r.Limit-res.Remaining, 0))
	if res.Allowed {
		return used, false
	}
	return used + uint64(r.Hits), true
}

// reset is the time until the descriptor's window ends: for a fixed
// window the rest of the epoch-aligned window, to the second, as
// envoyproxy/ratelimit computes it; for the other algorithms the time until
// the key is back to its full limit.
func (s *Service) reset(d *durationpb.Duration, r batch.Request, res batch.Result, now time.Time) *durationpb.Duration {
	if r.Kind == batch.Count || r.Kind == batch.Fixed {
		sec := int64(r.Window / time.Second)
		d.Seconds = sec - now.Unix()%sec
		return d
	}
	d.Seconds, d.Nanos = int64(res.Reset/time.Second), int32(res.Reset%time.Second)
	return d
}

// headers are the RateLimit-* headers of the descriptor nearest its limit.
func headers(st *pb.RateLimitResponse_DescriptorStatus) []*core.HeaderValue {
	reset := st.GetDurationUntilReset().AsDuration()
	return []*core.HeaderValue{
		{Key: "RateLimit-Limit", Value: strconv.FormatUint(uint64(st.CurrentLimit.RequestsPerUnit), 10)},
		{Key: "RateLimit-Remaining", Value: strconv.FormatUint(uint64(st.LimitRemaining), 10)},
		{Key: "RateLimit-Reset", Value: strconv.FormatInt(int64((reset+time.Second-1)/time.Second), 10)},
	}
}
