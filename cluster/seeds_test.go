package cluster

import (
	"context"
	"errors"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMissingAddrs(t *testing.T) {
	lookup := func(_ context.Context, _, host string) ([]net.IP, error) {
		if host == "peers.test" {
			return []net.IP{net.ParseIP("10.0.0.1"), net.ParseIP("10.0.0.2"), net.ParseIP("fd00::3")}, nil
		}
		return nil, errors.New("no such host")
	}
	have := map[string]bool{"10.0.0.1:7946": true}
	for _, tc := range []struct {
		seed string
		want []string
	}{
		// This node (10.0.0.1) is one of the name's addresses; the others
		// are still missing. The old rejoin took the name's first address
		// only, and so saw the seed as present.
		{"peers.test:7946", []string{"10.0.0.2:7946", "[fd00::3]:7946"}},
		{"10.0.0.1:7946", nil},
		{"10.0.0.9:7946", []string{"10.0.0.9:7946"}},
		{"unknown.test:7946", []string{"unknown.test:7946"}}, // for Join to retry
	} {
		assert.Equal(t, tc.want, missingAddrs(tc.seed, have, lookup), "missingAddrs(%q)", tc.seed)
	}
	have["10.0.0.2:7946"], have["[fd00::3]:7946"] = true, true
	assert.Empty(t, missingAddrs("peers.test:7946", have, lookup), "every address a member")
}
