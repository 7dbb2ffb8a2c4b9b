package httplimit_test

import (
	"net/http/httptest"
	"testing"

	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClientIP(t *testing.T) {
	ip, err := httplimit.NewClientIP([]string{"10.0.0.0/8", "2001:db8::1"})
	require.NoError(t, err)
	tests := []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"no proxy", "203.0.113.9:5555", nil, "203.0.113.9"},
		{"untrusted peer's header is ignored", "203.0.113.9:5555", []string{"1.2.3.4"}, "203.0.113.9"},
		{"trusted peer", "10.1.2.3:80", []string{"198.51.100.7"}, "198.51.100.7"},
		{"spoofed left entries are skipped", "10.1.2.3:80", []string{"6.6.6.6, 198.51.100.7"}, "198.51.100.7"},
		{"chain of trusted proxies", "10.1.2.3:80", []string{"198.51.100.7, 10.9.9.9", "10.4.4.4"}, "198.51.100.7"},
		{"every hop trusted", "10.1.2.3:80", []string{"10.9.9.9"}, "10.9.9.9"},
		{"trusted peer, no header", "10.1.2.3:80", nil, "10.1.2.3"},
		{"ipv6 proxy, client keyed by its /56", "[2001:db8::1]:443", []string{"2001:db8:0:1ff::42"}, "2001:db8:0:100::/56"},
		{"mapped ipv4", "[::ffff:203.0.113.9]:1", nil, "203.0.113.9"},
	}
	for _, tt := range tests {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		got, err := ip.Key(r)
		require.NoError(t, err, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}
	ip.IPv6Bits = 128
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "[2001:db8::7]:1"
	got, err := ip.Key(r)
	require.NoError(t, err)
	assert.Equal(t, "2001:db8::7", got, "IPv6Bits 128 keys each address")

	r.RemoteAddr = "pipe"
	_, err = ip.Key(r)
	assert.Error(t, err)
}
