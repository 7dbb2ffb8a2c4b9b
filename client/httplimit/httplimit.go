package httplimit

import (
	"context"
	"errors"
	"expvar"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/client"
)

// Config configures a Limiter. Client and exactly one of Rule or Policy are required.
type Config struct {
	Client *client.Client
	// Rule is the limit each key gets (Algorithm SLIDE, FIXED, LOG, TOKEN or
	// LEAKY). With LEAKY an admitted request waits its turn before it is served.
	Rule client.Rule
	// Policy names a server-side policy (RL.POLICY SET) checked with RL.CHECK.
	Policy string
	// Key returns the rate-limit key of a request; nil means ClientIP with
	// TrustedProxies. An error answers 400.
	Key func(*http.Request) (string, error)
	// TrustedProxies are the proxies whose X-Forwarded-For the default key believes.
	TrustedProxies []string
	// IPv6Bits is the prefix length the default key keeps of an IPv6 client
	// (0 means DefaultIPv6Bits, 56; 128 keys each address alone).
	IPv6Bits int
	// KeyPrefix is put before every key, so one store can serve several
	// limiters. Empty means "httplimit:" and the limiter's Name, or without a
	// Name its Policy or rule ("httplimit:SLIDE:100:0:60000:"), so limiters
	// with different rules never share a key; give limiters with the same
	// rule a Name each to count them apart.
	KeyPrefix string
	// Cost returns a request's cost (≥ 1); nil means 1.
	Cost func(*http.Request) int64
	// Name names the policy in the RateLimit headers; default Policy, else "default".
	Name string
	// LegacyHeaders also sets X-RateLimit-Limit, -Remaining and -Reset.
	LegacyHeaders bool
	// JSON answers 429 (and 503) with a small JSON body instead of text.
	JSON bool
	// FailOpen admits requests while rlstore cannot answer; false answers 503.
	// Either way the state is counted in Stats and logged. A configuration
	// error (client.IsConfigError: WRONGTYPE, refused arguments, an unknown
	// policy) is not an outage: it answers 500 either way.
	FailOpen bool
	// Logger receives a line when rlstore stops answering and when it is
	// back, and an ERROR for each configuration error (each distinct one
	// once, then at most once a minute); nil means slog.Default().
	Logger *slog.Logger
}

// Stats counts what the middleware did. Failures are calls rlstore did not
// answer with a decision (unreachable, timeout, error reply).
type Stats struct {
	Allowed      uint64 `json:"allowed"`
	Denied       uint64 `json:"denied"`
	FailedOpen   uint64 `json:"failed_open"`   // admitted without a decision
	FailedClosed uint64 `json:"failed_closed"` // answered 503
	// Misconfigured counts requests answered 500 because rlstore refused the
	// configuration (client.IsConfigError).
	Misconfigured uint64 `json:"misconfigured"`
	Failing       bool   `json:"failing"` // the last call failed
}

// Limiter is the middleware. It is safe for concurrent use; build it with New.
type Limiter struct {
	cfg     Config
	key     func(*http.Request) (string, error)
	name    client.HeaderOptions
	allowed atomic.Uint64
	denied  atomic.Uint64
	open    atomic.Uint64
	closed  atomic.Uint64
	misconf atomic.Uint64
	failing atomic.Bool
	confLog configLog
	rules   atomic.Pointer[policyRules] // Policy's rules for the headers
}

// policyRules is a Policy's definition as last read, for RateLimit-Policy.
type policyRules struct {
	rules []client.Rule
	at    time.Time
}

// rulesEvery is how often a Policy's definition is read again, so a
// redefined policy's headers follow within it.
const rulesEvery = time.Minute

// headerOptions returns the options for a decision's headers: with a Policy,
// its rules, read at most once per rulesEvery (a failed read leaves the
// headers with the binding rule's quota alone).
func (l *Limiter) headerOptions(ctx context.Context, now time.Time) client.HeaderOptions {
	o := l.name
	if l.cfg.Policy == "" {
		return o
	}
	p := l.rules.Load()
	if p == nil || now.Sub(p.at) >= rulesEvery {
		rules, err := l.cfg.Client.PolicyRules(ctx, l.cfg.Policy)
		if err != nil && p != nil {
			rules = p.rules
		}
		p = &policyRules{rules: rules, at: now}
		l.rules.Store(p)
	}
	o.Rules = p.rules
	return o
}

// New validates cfg and returns a Limiter.
func New(cfg Config) (*Limiter, error) {
	if cfg.Client == nil {
		return nil, errors.New("httplimit: Config.Client is nil")
	}
	if (cfg.Policy == "") == (cfg.Rule.Algorithm == "") {
		return nil, errors.New("httplimit: set exactly one of Config.Rule and Config.Policy")
	}
	if cfg.Rule.Algorithm != "" && !knownAlgorithm(cfg.Rule.Algorithm) {
		return nil, errors.New("httplimit: unknown algorithm " + strconv.Quote(cfg.Rule.Algorithm))
	}
	l := &Limiter{cfg: cfg, key: cfg.Key}
	if l.key == nil {
		ip, err := NewClientIP(cfg.TrustedProxies)
		if err != nil {
			return nil, err
		}
		if cfg.IPv6Bits != 0 {
			ip.IPv6Bits = cfg.IPv6Bits
		}
		l.key = ip.Key
	}
	if cfg.Logger == nil {
		l.cfg.Logger = slog.Default()
	}
	l.name = client.HeaderOptions{Name: cfg.Name, Legacy: cfg.LegacyHeaders}
	if l.name.Name == "" {
		l.name.Name = cfg.Policy
	}
	if l.cfg.KeyPrefix == "" {
		l.cfg.KeyPrefix = defaultPrefix(cfg)
	}
	return l, nil
}

// defaultPrefix names a limiter's keys after its Name, Policy or rule.
func defaultPrefix(cfg Config) string {
	switch {
	case cfg.Name != "":
		return "httplimit:" + cfg.Name + ":"
	case cfg.Policy != "":
		return "httplimit:policy:" + cfg.Policy + ":"
	}
	r := cfg.Rule
	return "httplimit:" + strings.ToUpper(r.Algorithm) + ":" + strconv.FormatInt(r.Limit, 10) + ":" +
		strconv.FormatInt(r.Rate, 10) + ":" + strconv.FormatInt(r.Window.Milliseconds(), 10) + ":"
}

func knownAlgorithm(a string) bool {
	switch strings.ToUpper(a) {
	case "SLIDE", "FIXED", "LOG", "TOKEN", "LEAKY":
		return true
	}
	return false
}

// Stats returns the counters so far.
func (l *Limiter) Stats() Stats {
	return Stats{Allowed: l.allowed.Load(), Denied: l.denied.Load(), FailedOpen: l.open.Load(),
		FailedClosed: l.closed.Load(), Misconfigured: l.misconf.Load(), Failing: l.failing.Load()}
}

// Var returns Stats as an expvar.Var, for expvar.Publish("ratelimit", l.Var()).
func (l *Limiter) Var() expvar.Var {
	return expvar.Func(func() any { return l.Stats() })
}

// Handler wraps next: each request is charged its cost under its key, and a
// denied one gets 429 without reaching next.
func (l *Limiter) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, err := l.key(r)
		if err != nil {
			http.Error(w, "cannot tell the client's address", http.StatusBadRequest)
			return
		}
		d, err := l.decide(r.Context(), l.cfg.KeyPrefix+key, l.cost(r))
		if err != nil {
			l.fail(w, r, next, err)
			return
		}
		l.recovered()
		d.SetHeaders(w.Header(), l.headerOptions(r.Context(), time.Now()))
		if !d.Allowed {
			l.denied.Add(1)
			l.reject(w, http.StatusTooManyRequests, "rate limit exceeded", d.Wait)
			return
		}
		l.allowed.Add(1)
		if d.Wait > 0 && !sleep(r.Context(), d.Wait) { // a LEAKY rule's turn
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (l *Limiter) cost(r *http.Request) int64 {
	if l.cfg.Cost == nil {
		return 1
	}
	return max(l.cfg.Cost(r), 1)
}

func (l *Limiter) decide(ctx context.Context, key string, cost int64) (client.Decision, error) {
	c, r := l.cfg.Client, l.cfg.Rule
	opt := client.Cost(cost)
	if l.cfg.Policy != "" {
		return c.Check(ctx, l.cfg.Policy, key, opt)
	}
	switch strings.ToUpper(r.Algorithm) {
	case "SLIDE":
		return c.Slide(ctx, key, r.Limit, r.Window, opt)
	case "FIXED":
		return c.Fixed(ctx, key, r.Limit, r.Window, opt)
	case "LOG":
		return c.Log(ctx, key, r.Limit, r.Window, opt)
	case "TOKEN":
		return c.Token(ctx, key, r.Limit, r.Rate, r.Window, opt)
	default: // LEAKY; New checked the name
		return c.Leaky(ctx, key, r.Limit, r.Rate, r.Window, opt)
	}
}

// fail serves a request rlstore gave no decision for: a configuration error
// answers 500; an outage is served open or closed, and its first failure is
// logged.
func (l *Limiter) fail(w http.ResponseWriter, r *http.Request, next http.Handler, err error) {
	if client.IsConfigError(err) {
		l.misconf.Add(1)
		if l.confLog.due(err.Error(), time.Now()) {
			l.cfg.Logger.Error("httplimit: rlstore refused this limiter's configuration; answering 500, never failing open", "err", err, "key_prefix", l.cfg.KeyPrefix)
		}
		l.reject(w, http.StatusInternalServerError, "rate limiter misconfigured", 0)
		return
	}
	if !l.failing.Swap(true) {
		l.cfg.Logger.Warn("httplimit: rlstore gave no decision; failing "+l.mode(), "err", err)
	}
	if l.cfg.FailOpen {
		l.open.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	l.closed.Add(1)
	l.reject(w, http.StatusServiceUnavailable, "rate limiter unavailable", 0)
}

func (l *Limiter) recovered() {
	if l.failing.Load() && l.failing.Swap(false) {
		l.cfg.Logger.Info("httplimit: rlstore is answering again")
	}
}

func (l *Limiter) mode() string {
	if l.cfg.FailOpen {
		return "open"
	}
	return "closed"
}

// reject writes the small error body; wait (if > 0) is given in whole seconds.
func (l *Limiter) reject(w http.ResponseWriter, status int, msg string, wait time.Duration) {
	secs := int64(0)
	if wait > 0 {
		secs = int64((wait + time.Second - 1) / time.Second)
	}
	if l.cfg.JSON {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		body := `{"error":"` + msg + `"`
		if secs > 0 {
			body += `,"retry_after":` + strconv.FormatInt(secs, 10)
		}
		_, _ = io.WriteString(w, body+"}\n")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if secs > 0 {
		msg += "; retry after " + strconv.FormatInt(secs, 10) + " s"
	}
	_, _ = io.WriteString(w, msg+"\n")
}

// sleep waits d unless ctx ends first, and reports whether it waited it all.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
