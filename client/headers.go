package client

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// HeaderOptions says how Decision.SetHeaders names the policy.
type HeaderOptions struct {
	// Name is the policy's name in RateLimit-Policy and RateLimit ("default" if empty).
	Name string
	// Legacy also sets X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (the Unix time, in seconds, when the key is full again).
	Legacy bool
	// Rules are the rules of the policy a Check decision came from
	// (Client.PolicyRules). RateLimit-Policy then lists each rule as
	// "name-i" (one rule keeps "name"), and RateLimit names the binding one
	// (Decision.Rule).
	Rules []Rule
}

// seconds rounds d up to whole seconds, so a client that waits is never early.
func seconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// Headers returns the header fields of SetHeaders in a new http.Header.
func (d Decision) Headers(o HeaderOptions) http.Header {
	h := make(http.Header, 6)
	d.SetHeaders(h, o)
	return h
}

// SetHeaders sets the IETF RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers: `"name";q=quota;w=window` and
// `"name";r=remaining;t=reset`), Retry-After on a denial that can succeed
// later, and the legacy X-RateLimit-* fields if o.Legacy. q per w is the
// rate a client can keep up (see Decision.Window; w is rounded up, so it
// never advertises more); with o.Rules every rule of the policy is listed.
func (d Decision) SetHeaders(h http.Header, o HeaderOptions) {
	name := quote(o.Name)
	if len(o.Rules) > 0 && d.Rule >= 0 && d.Rule < len(o.Rules) {
		h.Set("RateLimit-Policy", rulesPolicy(o.Name, o.Rules))
		name = quote(ruleName(o.Name, d.Rule, len(o.Rules)))
	} else {
		h.Set("RateLimit-Policy", quotaItem(name, d.Limit, d.Window))
	}
	h.Set("RateLimit", name+";r="+strconv.FormatInt(d.Remaining, 10)+";t="+strconv.FormatInt(seconds(d.Reset), 10))
	if !d.Allowed && d.Wait >= 0 {
		h.Set("Retry-After", strconv.FormatInt(max(seconds(d.Wait), 1), 10))
	}
	if o.Legacy {
		h.Set("X-RateLimit-Limit", strconv.FormatInt(d.Limit, 10))
		h.Set("X-RateLimit-Remaining", strconv.FormatInt(d.Remaining, 10))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(d.Reset).Add(time.Second-1).Unix(), 10))
	}
}

// quotaItem is one RateLimit-Policy item: `"name";q=quota;w=window`.
func quotaItem(quoted string, quota int64, window time.Duration) string {
	item := quoted + ";q=" + strconv.FormatInt(quota, 10)
	if w := seconds(window); w > 0 {
		item += ";w=" + strconv.FormatInt(w, 10)
	}
	return item
}

// rulesPolicy lists every rule of a policy, named name-0, name-1, … (a
// single rule keeps name).
func rulesPolicy(name string, rules []Rule) string {
	var b strings.Builder
	for i, r := range rules {
		if i > 0 {
			b.WriteString(", ")
		}
		q, w := r.Quota()
		b.WriteString(quotaItem(quote(ruleName(name, i, len(rules))), q, w))
	}
	return b.String()
}

// ruleName names rule i of n: name itself for a policy of one rule.
func ruleName(name string, i, n int) string {
	if n == 1 {
		return name
	}
	if name == "" {
		name = "default"
	}
	return name + "-" + strconv.Itoa(i)
}

// quote makes name a structured-field string: quoted, with \ and " escaped
// and anything outside printable ASCII dropped.
func quote(name string) string {
	if name == "" {
		name = "default"
	}
	var b strings.Builder
	b.Grow(len(name) + 2)
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c >= 0x20 && c < 0x7f:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}
