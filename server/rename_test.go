package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRenameCommand disables FLUSHALL and serves CONFIG under another name.
func TestRenameCommand(t *testing.T) {
	_, addr := startServer(t, Config{RenameCommands: map[string]string{"FLUSHALL": "", "config": "cfg-7f3a"}})
	c := newClient(t, addr, 2)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 5, 60).Err())
	assert.EqualError(t, c.Do(ctx, "FLUSHALL").Err(), "ERR unknown command 'FLUSHALL', with args beginning with: ")
	assert.EqualValues(t, 1, c.Exists(ctx, "k").Val(), "FLUSHALL did not run")
	assert.EqualError(t, c.Do(ctx, "CONFIG", "GET", "maxclients").Err(),
		"ERR unknown command 'CONFIG', with args beginning with: 'GET' 'maxclients' ")
	got, err := c.Do(ctx, "CFG-7F3A", "GET", "maxclients").StringSlice()
	require.NoError(t, err)
	assert.Equal(t, []string{"maxclients", "10000"}, got)
}

func TestRenameCommandRefusesBadNames(t *testing.T) {
	for _, r := range []map[string]string{
		{"nosuch": ""},
		{"flushall": "ping"},
		{"flushall": "a-name-longer-than-thirty-two-bytes"},
	} {
		_, err := New(Config{Store: mustStore(t), RenameCommands: r})
		assert.Error(t, err, "%v", r)
	}
}

// A renamed command stays unknown under its own name right after it ran
// under its new one on the same connection (resolveFor's shortcut).
func TestRenamedCommandNotUnderOldNameInPipeline(t *testing.T) {
	_, addr := startServer(t, Config{RenameCommands: map[string]string{"rl.slide": "slide-9c"}})
	c := dialRaw(t, addr)
	c.send(t, respCmd("SLIDE-9C", "k", "5", "60")+respCmd("RL.SLIDE", "k", "5", "60"))
	require.Equal(t, "*5", c.line(t))
	for range 5 {
		c.line(t)
	}
	assert.Equal(t, "-ERR unknown command 'RL.SLIDE', with args beginning with: 'k' '5' '60' ", c.line(t))
}
