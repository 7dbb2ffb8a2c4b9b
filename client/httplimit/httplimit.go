package httplimit

import (
	"context"
	"errors"
	"expvar"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/client"
)

// DefaultTimeout bounds one decision when Config.Timeout is 0.
const DefaultTimeout = 250 * time.Millisecond

// Config configures a Limiter: Client with exactly one of Rule or Policy,
// or a Decider.
type Config struct {
	Client *client.Client
	// Decider decides instead of Client with Rule or Policy (for tests
	// without a server, or a decision made some other way).
	Decider Decider
	// Rule is the limit each key gets (Algorithm SLIDE, FIXED, LOG, TOKEN or
	// LEAKY). SLIDE is client.Slide: any Window span holds at most Limit.
	// With LEAKY an admitted request waits its turn before it is served.
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
	// Timeout bounds each decision (0 means DefaultTimeout, 250 ms; negative,
	// none); past it the request is served as FailOpen says. go-redis stops
	// waiting at a context's deadline only with ContextTimeoutEnabled, so New
	// refuses a Client without it unless Timeout is negative.
	Timeout time.Duration
	// Skip exempts a request: it is served without a decision or headers.
	Skip func(*http.Request) bool
	// OnLimited writes the response to a denied request instead of the
	// default 429; the RateLimit headers and Retry-After are already set.
	OnLimited func(http.ResponseWriter, *http.Request, client.Decision)
	// OnError writes the response when there is no decision and the request
	// is not served (an outage with FailOpen false, or a configuration
	// error) instead of the default 503 or 500. Stats and logs are the same.
	OnError func(http.ResponseWriter, *http.Request, error)
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
	decider Decider
	timeout time.Duration
	rules   *rulesCache // a Policy's rules for the headers; nil otherwise
}

// New validates cfg and returns a Limiter.
func New(cfg Config) (*Limiter, error) {
	l := &Limiter{cfg: cfg, key: cfg.Key, decider: cfg.Decider, timeout: cfg.Timeout}
	if err := l.setDecider(); err != nil {
		return nil, err
	}
	if l.timeout == 0 {
		l.timeout = DefaultTimeout
	}
	if l.timeout > 0 && cfg.Client != nil && !cfg.Client.HonoursDeadlines() {
		return nil, errors.New("httplimit: the go-redis client needs ContextTimeoutEnabled: true for Config.Timeout to bound a decision (or set Timeout < 0)")
	}
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
	if err := l.verify(); err != nil {
		return nil, err
	}
	return l, nil
}

// verifyTimeout is the least time New's check waits (more if Config.Timeout
// is longer): a start is not a request, and a busy server's late answer
// must not be taken for an outage and let a wrong password through.
const verifyTimeout = time.Second

// verify asks rlstore, once at New, whether it takes the client's
// credentials: a refusal (client.ErrAuth) is a configuration error and New
// fails with it, instead of every request failing later; no answer is an
// outage, which is logged, and New goes on (FailOpen decides per request).
func (l *Limiter) verify() error {
	if l.cfg.Client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), max(l.timeout, verifyTimeout))
	defer cancel()
	err := l.cfg.Client.Verify(ctx)
	switch {
	case err == nil:
		return nil
	case client.IsConfigError(err):
		return fmt.Errorf("httplimit: rlstore refused the client's credentials: %w", err)
	}
	l.cfg.Logger.Warn("httplimit: rlstore did not answer at start; each request fails open or closed as FailOpen says until it does", "err", err)
	return nil
}

// setDecider checks that the config names one way to decide and builds it.
func (l *Limiter) setDecider() error {
	cfg := l.cfg
	if cfg.Decider != nil {
		if cfg.Client != nil || cfg.Policy != "" || cfg.Rule.Algorithm != "" {
			return errors.New("httplimit: set Config.Decider or Config.Client, not both")
		}
		return nil
	}
	if cfg.Client == nil {
		return errors.New("httplimit: Config.Client is nil")
	}
	if (cfg.Policy == "") == (cfg.Rule.Algorithm == "") {
		return errors.New("httplimit: set exactly one of Config.Rule and Config.Policy")
	}
	if cfg.Policy != "" {
		l.decider = policyDecider{c: cfg.Client, policy: cfg.Policy}
		l.rules = &rulesCache{c: cfg.Client, policy: cfg.Policy}
		return nil
	}
	if !knownAlgorithm(cfg.Rule.Algorithm) {
		return errors.New("httplimit: unknown algorithm " + strconv.Quote(cfg.Rule.Algorithm))
	}
	l.decider = ruleDecider{c: cfg.Client, r: cfg.Rule}
	return nil
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
		if l.cfg.Skip != nil && l.cfg.Skip(r) {
			next.ServeHTTP(w, r)
			return
		}
		key, err := l.key(r)
		if err != nil {
			http.Error(w, "cannot tell the client's address", http.StatusBadRequest)
			return
		}
		ctx, cancel := l.decisionContext(r.Context())
		d, err := l.decider.Decide(ctx, l.cfg.KeyPrefix+key, l.cost(r))
		if err != nil {
			cancel()
			l.fail(w, r, next, err)
			return
		}
		l.recovered()
		d.SetHeaders(w.Header(), l.headerOptions(ctx, time.Now()))
		cancel()
		if !d.Allowed {
			l.denied.Add(1)
			if l.cfg.OnLimited != nil {
				l.cfg.OnLimited(w, r, d)
				return
			}
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

// decisionContext bounds one decision (and its headers' policy read) by the
// limiter's timeout.
func (l *Limiter) decisionContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if l.timeout < 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, l.timeout)
}

// headerOptions returns the options for a decision's headers: with a
// Policy, its rules.
func (l *Limiter) headerOptions(ctx context.Context, now time.Time) client.HeaderOptions {
	o := l.name
	if l.rules != nil {
		o.Rules = l.rules.get(ctx, now)
	}
	return o
}

func (l *Limiter) cost(r *http.Request) int64 {
	if l.cfg.Cost == nil {
		return 1
	}
	return max(l.cfg.Cost(r), 1)
}
