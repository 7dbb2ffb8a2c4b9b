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
// (draft-ietf-httpapi-ratelimit-headers: `"name";q=limit;w=window` and
// `"name";r=remaining;t=reset`), Retry-After on a denial that can succeed
// later, and the legacy X-RateLimit-* fields if o.Legacy.
func (d Decision) SetHeaders(h http.Header, o HeaderOptions) {
	name := quote(o.Name)
	policy := name + ";q=" + strconv.FormatInt(d.Limit, 10)
	if w := seconds(d.Window); w > 0 {
		policy += ";w=" + strconv.FormatInt(w, 10)
	}
	h.Set("RateLimit-Policy", policy)
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
