package server

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testACL = `# users of the ACL tests
user default off
user admin on >admin-pw ~* +@all
user limiter on >limiter-pw ~api:* +rl.slide +rl.token +ping
user reader on >reader-pw %R~api:* +@all -config
user gone off >gone-pw ~* +@all
`

func writeACL(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}

func userClient(t *testing.T, addr, user, pass string, proto int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, Protocol: proto, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestACLUsers(t *testing.T) {
	path := writeACL(t, testACL)
	_, addr := startServer(t, Config{ACLFile: path})
	ctx := ctxT(t)

	anon := newClient(t, addr, 2)
	assert.EqualError(t, anon.Do(ctx, "RL.SLIDE", "api:x", 5, 10).Err(), core.ErrNoAuth, "the default user is off")

	for _, proto := range []int{2, 3} { // RESP2 sends AUTH user pass; RESP3 sends HELLO 3 AUTH user pass
		lim := userClient(t, addr, "limiter", "limiter-pw", proto)
		require.NoError(t, lim.Do(ctx, "RL.SLIDE", "api:x", 5, 10).Err())
		require.NoError(t, lim.Do(ctx, "RL.TOKEN", "api:t", 5, 1, 1).Err())
		assert.EqualError(t, lim.Do(ctx, "RL.SLIDE", "web:x", 5, 10).Err(), auth.ErrNoPermKey)
		assert.EqualError(t, lim.Do(ctx, "RL.FIXED", "api:f", 5, 10).Err(), "NOPERM this user has no permissions to run the 'rl.fixed' command")
		assert.EqualError(t, lim.Do(ctx, "CONFIG", "GET", "*").Err(), "NOPERM this user has no permissions to run the 'config|get' command")
		assert.EqualError(t, lim.Do(ctx, "FLUSHALL").Err(), "NOPERM this user has no permissions to run the 'flushall' command")
	}

	rd := userClient(t, addr, "reader", "reader-pw", 3)
	require.NoError(t, rd.Do(ctx, "RL.INFO", "api:x").Err(), "a read of a key under %R~")
	assert.EqualError(t, rd.Do(ctx, "RL.SLIDE", "api:x", 5, 10).Err(), auth.ErrNoPermKey, "%R~ does not allow writes")
	assert.EqualError(t, rd.Do(ctx, "CONFIG", "GET", "*").Err(), "NOPERM this user has no permissions to run the 'config|get' command")
	assert.Equal(t, "reader", rd.Do(ctx, "ACL", "WHOAMI").Val())

	adm := userClient(t, addr, "admin", "admin-pw", 3)
	assert.Equal(t, []any{"admin", "default", "gone", "limiter", "reader"}, adm.Do(ctx, "ACL", "USERS").Val())
	list := adm.Do(ctx, "ACL", "LIST").String()
	assert.Contains(t, list, "user limiter on #")
	assert.Contains(t, list, "~api:* +rl.slide +rl.token +ping")
	assert.NotContains(t, list, "limiter-pw", "ACL LIST shows hashes, never passwords")

	assert.EqualError(t, anon.Do(ctx, "AUTH", "gone", "gone-pw").Err(), auth.ErrWrongPass, "a user that is off cannot log in")
	assert.EqualError(t, anon.Do(ctx, "AUTH", "nobody", "x").Err(), auth.ErrWrongPass)
	assert.EqualError(t, anon.Do(ctx, "AUTH", "limiter", "wrong").Err(), auth.ErrWrongPass)
	require.NoError(t, anon.Do(ctx, "AUTH", "limiter", "limiter-pw").Err())
	assert.EqualError(t, anon.Do(ctx, "ACL", "WHOAMI").Err(), "NOPERM this user has no permissions to run the 'acl|whoami' command")
}

func TestACLLoad(t *testing.T) {
	path := writeACL(t, testACL)
	_, addr := startServer(t, Config{ACLFile: path})
	ctx := ctxT(t)
	adm := userClient(t, addr, "admin", "admin-pw", 3)
	require.NoError(t, os.WriteFile(path, []byte(testACL+"user newbie on >newbie-pw ~* +@all\n"), 0o600))
	require.NoError(t, adm.Do(ctx, "ACL", "LOAD").Err())
	nb := userClient(t, addr, "newbie", "newbie-pw", 3)
	assert.Equal(t, "newbie", nb.Do(ctx, "ACL", "WHOAMI").Val())

	require.NoError(t, os.WriteFile(path, []byte("user broken on +@nosuch\n"), 0o600))
	assert.ErrorContains(t, adm.Do(ctx, "ACL", "LOAD").Err(), "line 1", "a bad file is refused and the users stay")
	assert.Equal(t, "newbie", nb.Do(ctx, "ACL", "WHOAMI").Val())
}

func TestACLFileErrors(t *testing.T) {
	for _, text := range []string{"usr x on", "user x on +@read", "user x on #abc", "user a on\nuser a off", "user x on %X~k"} {
		_, err := New(Config{Store: mustStore(t), ACLFile: writeACL(t, text)})
		assert.Errorf(t, err, "%q", text)
	}
	_, err := New(Config{Store: mustStore(t), ACLFile: filepath.Join(t.TempDir(), "missing")})
	assert.Error(t, err)
}

// TestAuthBruteForceGuard: after the limit of wrong passwords from one
// address, even the right password is refused unchecked, on a new
// connection too, until the window lets the address try again.
func TestAuthBruteForceGuard(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "right", AuthFailLimit: 3, AuthFailWindow: time.Second})
	ctx := ctxT(t)
	c := newClient(t, addr, 2)
	for range 3 {
		assert.EqualError(t, c.Do(ctx, "AUTH", "wrong").Err(), auth.ErrWrongPass)
	}
	err := c.Do(ctx, "AUTH", "right").Err()
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "WRONGPASS too many wrong passwords from this address; retry in "), err.Error())
	fresh := newClient(t, addr, 2)
	assert.ErrorContains(t, fresh.Do(ctx, "AUTH", "right").Err(), "too many wrong passwords", "reconnecting does not reset the count")
	require.Eventually(t, func() bool { return fresh.Do(ctx, "AUTH", "right").Err() == nil }, deadline, 50*time.Millisecond,
		"the address may try again once its failures leave the window")
}

func TestAuthGuardOff(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "right", AuthFailLimit: -1})
	ctx := ctxT(t)
	for range 4 {
		c := newClient(t, addr, 2)
		assert.EqualError(t, c.Do(ctx, "AUTH", "wrong").Err(), auth.ErrWrongPass)
		assert.EqualError(t, c.Do(ctx, "AUTH", "wrong").Err(), auth.ErrWrongPass)
	}
	require.NoError(t, newClient(t, addr, 2).Do(ctx, "AUTH", "right").Err())
}

// TestPasswordsNeverLogged runs every path a password takes (AUTH right and
// wrong, HELLO AUTH, CONFIG SET and GET, the slow log, ACL LIST, INFO,
// CLIENT LIST) with the log at debug, and greps everything captured for the
// passwords.
func TestPasswordsNeverLogged(t *testing.T) {
	var logs syncBuffer
	path := writeACL(t, "user default on >hunter2-default ~* +@all\nuser svc on >hunter2-svc ~* +@all\n")
	log := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, addr := startServer(t, Config{ACLFile: path, RequirePass: "hunter2-req", Logger: log, SlowlogSlowerThan: 1})
	ctx := ctxT(t)
	var seen bytes.Buffer
	c := userClient(t, addr, "svc", "hunter2-svc", 3)
	_ = c.Do(ctx, "AUTH", "svc", "hunter2-wrong").Err()
	require.NoError(t, c.Do(ctx, "AUTH", "svc", "hunter2-svc").Err())
	require.NoError(t, c.Do(ctx, "CONFIG", "SET", "requirepass", "hunter2-new").Err())
	for _, args := range [][]any{{"CONFIG", "GET", "*"}, {"SLOWLOG", "GET", -1}, {"ACL", "LIST"}, {"INFO", "everything"}, {"CLIENT", "LIST"}} {
		v, err := c.Do(ctx, args...).Result()
		require.NoError(t, err)
		fmt.Fprint(&seen, v)
	}
	assert.Contains(t, seen.String(), "requirepass", "CONFIG GET was seen")
	all := seen.String() + string(logs.Bytes())
	assert.NotContains(t, all, "hunter2", "a password reached a log or a reply")
}
