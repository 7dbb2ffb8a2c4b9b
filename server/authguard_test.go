package server

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuthSlowedAddressRightPassword is issue 26's item 10: an address
// that sent wrong passwords is slowed, not locked out: the right password
// is accepted after the hold, and other users behind the same address
// (a NAT, sidecars on loopback) are not refused because of one user's.
func TestAuthSlowedAddressRightPassword(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default off\nuser a on >pa ~* +@all\nuser b on >pb ~* +@all\n"), 0o600))
	clock := newFakeClock(time.Unix(1_700_000_000, 0))
	_, addr := startServer(t, Config{ACLFile: path, AuthFailLimit: 4, AuthFailWindow: time.Second, Clock: clock.Now})
	ctx := ctxT(t)
	c := newClient(t, addr, 2)
	for range 3 {
		assert.EqualError(t, c.Do(ctx, "AUTH", "a", "wrong").Err(), auth.ErrWrongPass)
	}
	require.NoError(t, c.Do(ctx, "AUTH", "a", "pa").Err(), "slowed, then accepted")
	for range 4 {
		assert.EqualError(t, newClient(t, addr, 2).Do(ctx, "AUTH", "a", "wrong").Err(), auth.ErrWrongPass)
	}
	assert.ErrorContains(t, newClient(t, addr, 2).Do(ctx, "AUTH", "a", "pa").Err(), "too many wrong passwords", "past the limit")
	require.NoError(t, newClient(t, addr, 2).Do(ctx, "AUTH", "b", "pb").Err(), "another user at the same address")
	for i := range 6 { // the address's own limit, 3×4, over users
		_ = newClient(t, addr, 2).Do(ctx, "AUTH", fmt.Sprint("x", i), "wrong").Err()
	}
	assert.ErrorContains(t, newClient(t, addr, 2).Do(ctx, "AUTH", "b", "pb").Err(), "too many wrong passwords", "every user, once the address has failed 3×limit")
}
