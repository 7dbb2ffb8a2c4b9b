package gateway

import (
	"strconv"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
)

// appendStoreKey appends the rlstore key of a descriptor's counter:
// prefix domain:key=value:key=value|<algorithm><window seconds>. Each part
// is escaped, so that no two descriptors share a key (envoyproxy/ratelimit
// joins them with '_', so there "a_b"+"c" and "a"+"b_c" do), and braces are
// escaped too, so that a value cannot pick a cluster slot with a hash tag.
// Keys change with the window, as envoyproxy/ratelimit's change with the
// unit, so a new unit starts a new count.
func (s *Service) appendStoreKey(b []byte, domain string, d *pbstruct.RateLimitDescriptor, c *check) []byte {
	b = append(b, s.opts.KeyPrefix...)
	b = escape(b, domain)
	for i, e := range d.GetEntries() {
		b = append(b, ':')
		b = escape(b, e.GetKey())
		b = append(b, '=')
		v := e.GetValue()
		if i < len(c.share) && c.share[i] != "" {
			v = c.share[i]
		}
		b = escape(b, v)
	}
	b = append(b, '|', "cfstlq"[kindOf(c.limit.Algorithm)])
	return strconv.AppendInt(b, c.limit.Unit.Seconds(), 10)
}

// escape appends s with the bytes the key's syntax uses percent-encoded.
func escape(b []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; ch {
		case '%', ':', '=', '|', '{', '}':
			b = append(b, '%', hex[ch>>4], hex[ch&15])
		default:
			b = append(b, ch)
		}
	}
	return b
}
