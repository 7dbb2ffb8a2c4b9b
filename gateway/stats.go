package gateway

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultMaxSeries bounds the per-descriptor metric series: detailed_metric
// and value_to_metric name a series by request values, so without a bound
// a client could grow the table without end. Hits past it count under one
// overflow series.
const DefaultMaxSeries = 10000

// overflowSeries is the descriptor label of the hits past MaxSeries.
const overflowSeries = "_overflow"

// counters are one descriptor's stats, named as envoyproxy/ratelimit names them.
type counters struct {
	domain, descriptor string
	totalHits          atomic.Uint64
	overLimit          atomic.Uint64
	nearLimit          atomic.Uint64
	withinLimit        atomic.Uint64
	shadowMode         atomic.Uint64

	overLimitLocalCache atomic.Uint64
}

// Stats are the service's counters, for Prometheus.
type Stats struct {
	max int

	mu     sync.RWMutex // guards byKey
	byKey  map[string]*counters
	overMu sync.Mutex // guards over
	over   map[string]*counters

	serviceErrors  atomic.Uint64
	unknownDomain  atomic.Uint64
	globalShadow   atomic.Uint64
	ConfigLoads    atomic.Uint64 // successful loads and reloads
	ConfigFailures atomic.Uint64 // loads that failed, keeping the configuration in force
}

func newStats(max int) *Stats {
	if max <= 0 {
		max = DefaultMaxSeries
	}
	return &Stats{max: max, byKey: map[string]*counters{}, over: map[string]*counters{}}
}

// series returns the counters of key, a stats key domain.descriptor….
func (st *Stats) series(domain, key string) *counters {
	st.mu.RLock()
	c := st.byKey[key]
	st.mu.RUnlock()
	if c != nil {
		return c
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if c = st.byKey[key]; c != nil {
		return c
	}
	if len(st.byKey) >= st.max {
		return st.overflow(domain)
	}
	// A request's strings may share their memory with the whole request
	// (codec.go): a series kept for good keeps copies.
	key, domain = strings.Clone(key), strings.Clone(domain)
	c = &counters{domain: domain, descriptor: strings.TrimPrefix(strings.TrimPrefix(key, domain), ".")}
	st.byKey[key] = c
	return c
}

// overflow is the overflow series of a domain. Only configured domains
// get here (a descriptor of an unknown one matches no limit), so the map
// is bounded by the configuration.
func (st *Stats) overflow(domain string) *counters {
	st.overMu.Lock()
	defer st.overMu.Unlock()
	c := st.over[domain]
	if c == nil {
		domain = strings.Clone(domain)
		c = &counters{domain: domain, descriptor: overflowSeries}
		st.over[domain] = c
	}
	return c
}

// WriteMetrics writes the counters in Prometheus's text format.
func (st *Stats) WriteMetrics(w io.Writer) {
	st.mu.RLock()
	all := make([]*counters, 0, len(st.byKey)+len(st.over))
	for _, c := range st.byKey {
		all = append(all, c)
	}
	st.mu.RUnlock()
	st.overMu.Lock()
	for _, c := range st.over {
		all = append(all, c)
	}
	st.overMu.Unlock()
	sort.Slice(all, func(i, j int) bool {
		if all[i].domain != all[j].domain {
			return all[i].domain < all[j].domain
		}
		return all[i].descriptor < all[j].descriptor
	})
	for _, m := range []struct {
		name, help string
		get        func(*counters) uint64
	}{
		{"total_hits", "Hits asked for per descriptor (envoyproxy/ratelimit's total_hits)", func(c *counters) uint64 { return c.totalHits.Load() }},
		{"over_limit", "Hits over the limit per descriptor", func(c *counters) uint64 { return c.overLimit.Load() }},
		{"near_limit", "Hits past the near-limit ratio (0.8) of the limit per descriptor", func(c *counters) uint64 { return c.nearLimit.Load() }},
		{"within_limit", "Hits within the limit per descriptor", func(c *counters) uint64 { return c.withinLimit.Load() }},
		{"shadow_mode", "Hits over the limit that shadow_mode let through per descriptor", func(c *counters) uint64 { return c.shadowMode.Load() }},
		{"over_limit_with_local_cache", "Hits over the limit answered from the local over-limit cache per descriptor", func(c *counters) uint64 { return c.overLimitLocalCache.Load() }},
	} {
		name := "rlstore_gateway_rate_limit_" + m.name + "_total"
		fmt.Fprintf(w, "# HELP %s %s.\n# TYPE %s counter\n", name, m.help, name)
		for _, c := range all {
			fmt.Fprintf(w, "%s{domain=\"%s\",descriptor=\"%s\"} %d\n", name, labelEscape(c.domain), labelEscape(c.descriptor), m.get(c))
		}
	}
	for _, g := range []struct {
		name, help string
		v          uint64
	}{
		{"should_rate_limit_errors", "ShouldRateLimit calls answered with an error", st.serviceErrors.Load()},
		{"unknown_domain", "Descriptors of a domain no configuration file names", st.unknownDomain.Load()},
		{"global_shadow_mode", "OVER_LIMIT answers the global shadow mode turned into OK", st.globalShadow.Load()},
		{"config_load_success", "Configuration loads and reloads that succeeded", st.ConfigLoads.Load()},
		{"config_load_error", "Configuration loads and reloads that failed, keeping the configuration in force", st.ConfigFailures.Load()},
	} {
		name := "rlstore_gateway_" + g.name + "_total"
		fmt.Fprintf(w, "# HELP %s %s.\n# TYPE %s counter\n%s %d\n", name, g.help, name, name, g.v)
	}
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func labelEscape(s string) string { return labelEscaper.Replace(s) }
