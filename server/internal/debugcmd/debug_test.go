package debugcmd

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
)

// TestAllowed: with "local" only loopback clients may run DEBUG; with
// "yes", any client.
func TestAllowed(t *testing.T) {
	clock := NewClock(time.Now)
	for _, tc := range []struct {
		addr      string
		localOnly bool
		want      bool
	}{
		{"[::1]:5000", true, true},
		{"127.0.0.1:5000", true, true},
		{"10.1.2.3:5000", true, false}, // DebugLocal, a remote client
		{"/tmp/sock", true, false},
		{"10.1.2.3:5000", false, true}, // DebugYes, a remote client
	} {
		g := New(clock, tc.localOnly)
		assert.Equal(t, tc.want, g.allowed(&core.Session{Addr: tc.addr}), "%s, local only %v", tc.addr, tc.localOnly)
	}
}

// TestClockStops: SET-CLOCK's instant holds until 0 lets the base clock run.
func TestClockStops(t *testing.T) {
	base := time.Unix(100, 0)
	c := NewClock(func() time.Time { return base })
	assert.Equal(t, base, c.Now())
	c.at.Store(5e9)
	assert.Equal(t, time.Unix(5, 0), c.Now())
	c.at.Store(0)
	assert.Equal(t, base, c.Now())
}
