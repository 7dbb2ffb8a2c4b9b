package auth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/server/internal/core"
)

// A session starts as the default user, authenticated only if that user
// needs no password; Login sets its user in the slot Users keeps, and the
// pipeline asks Permit only for a user with rules (Limited).
func TestUsersSessions(t *testing.T) {
	var slots core.Slots
	open, err := NewUsers("", "", &slots)
	require.NoError(t, err)
	x := &core.Session{}
	open.Open(x, "")
	assert.True(t, x.Authed, "no requirepass: every connection is in")
	assert.False(t, x.Limited)
	assert.Nil(t, open.Of(x))

	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte("user default off\nuser app on >pw ~api:* +@all\n"), 0o600))
	users, err := NewUsers(path, "", &slots)
	require.NoError(t, err)
	x = &core.Session{}
	users.Open(x, "")
	assert.False(t, x.Authed, "the default user is off")
	app, ok := users.Authenticate([][]byte{[]byte("app"), []byte("pw")})
	require.True(t, ok)
	_, ok = users.Authenticate([][]byte{[]byte("app"), []byte("no")})
	assert.False(t, ok)
	users.Login(x, app)
	assert.True(t, x.Authed)
	assert.True(t, x.Limited)
	assert.Same(t, app, users.Of(x))

	get := &core.Command{Name: "get", FirstKey: 1, LastKey: 1, KeyStep: 1}
	assert.Empty(t, users.Permit(x, get, [][]byte{[]byte("get"), []byte("api:1")}))
	assert.Equal(t, ErrNoPermKey, users.Permit(x, get, [][]byte{[]byte("get"), []byte("web:1")}))

	pass, err := NewUsers("", "secret", &slots)
	require.NoError(t, err)
	x = &core.Session{}
	pass.Open(x, "")
	assert.False(t, x.Authed, "requirepass")
	_, ok = pass.Authenticate([][]byte{[]byte("secret")})
	assert.True(t, ok)
	_, ok = pass.Authenticate([][]byte{[]byte("other"), []byte("secret")})
	assert.False(t, ok, "requirepass is the default user's")
}
