package server

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A command's secrets are an attribute of its table entry, not of its name:
// renamed (rename-command), AUTH and HELLO still have their passwords
// hidden from MONITOR and kept out of the slow log, and so has the
// node-to-node handshake's proof.
func TestRenamedSecretsStayRedacted(t *testing.T) {
	_, addr := startServer(t, Config{RequirePass: "pw", RenameCommands: map[string]string{"auth": "login", "hello": "hi"}})
	m, c := dialRaw(t, addr), dialRaw(t, addr)
	require.Equal(t, "OK", m.call(t, "LOGIN", "pw"))
	require.Equal(t, "OK", m.call(t, "CONFIG", "SET", "slowlog-log-slower-than", "0"))
	require.Equal(t, "OK", m.call(t, "MONITOR"))
	require.Equal(t, "OK", c.call(t, "LOGIN", "default", "pw"))
	c.call(t, "HI", "2", "AUTH", "default", "pw", "SETNAME", "x")
	c.call(t, "RL.PEER", "AUTH", "proof")
	var lines []string
	for range 3 {
		_, rest, ok := strings.Cut(m.line(t), "] ")
		require.True(t, ok)
		lines = append(lines, rest)
	}
	assert.Equal(t, []string{
		`"LOGIN" "(redacted)" "(redacted)"`,
		`"HI" "2" "AUTH" "(redacted)" "(redacted)" "SETNAME" "x"`,
		`"RL.PEER" "(redacted)" "(redacted)"`,
	}, lines)

	log := c.call(t, "SLOWLOG", "GET", "-1")
	assert.NotContains(t, log, "pw", "a password in the slow log: %s", log)
	assert.NotContains(t, log, "proof", "a peer's proof in the slow log: %s", log)
	for _, name := range []string{"LOGIN", "HI", "RL.PEER"} {
		assert.Contains(t, log, "["+name+" (redacted)]")
	}
}
