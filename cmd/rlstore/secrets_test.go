package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRenameCommandFlag(t *testing.T) {
	c, err := load(t, []string{"--rename-command", "FLUSHALL", "--rename-command", "CONFIG cfg-1", "--rename-command", `KEYS ""`}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"flushall": "", "config": "cfg-1", "keys": ""}, c.RenameCommands)

	c, err = load(t, nil, map[string]string{"RLSTORE_RENAME_COMMAND": "FLUSHALL,CONFIG cfg-2"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"flushall": "", "config": "cfg-2"}, c.RenameCommands)

	c, err = load(t, []string{"--config", writeFile(t, "rename-command:\n  - FLUSHALL\n  - CONFIG cfg-3\n")}, nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"flushall": "", "config": "cfg-3"}, c.RenameCommands)

	_, err = load(t, []string{"--rename-command", "A B C"}, nil)
	assert.Error(t, err)
}

func TestRequirePassFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pass")
	require.NoError(t, os.WriteFile(path, []byte("s3cret\n"), 0o600))
	c, err := load(t, []string{"--requirepass-file", path}, nil)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", c.RequirePass)
	assert.False(t, c.passOnCmdline)

	_, err = load(t, []string{"--requirepass-file", path, "--requirepass", "x"}, nil)
	assert.ErrorContains(t, err, "both set")
	_, err = load(t, []string{"--requirepass-file", filepath.Join(t.TempDir(), "none")}, nil)
	assert.Error(t, err)

	c, err = load(t, nil, map[string]string{"RLSTORE_REQUIREPASS": "env"})
	require.NoError(t, err)
	assert.False(t, c.passOnCmdline, "the environment is not the process list")
}

// TestProcessWarnsOfPasswordOnCommandLine: any local user can read a
// command-line password in the process list, so the start warns of it.
func TestProcessWarnsOfPasswordOnCommandLine(t *testing.T) {
	p := startProc(t, nil, "--port", "0", "--requirepass", "pw")
	p.Addr(t)
	p.WaitLog(t, regexp.MustCompile(`level=WARN msg="--requirepass on the command line can be read by any local user`))

	path := filepath.Join(t.TempDir(), "pass")
	require.NoError(t, os.WriteFile(path, []byte("pw\n"), 0o600))
	q := startProc(t, nil, "--port", "0", "--requirepass-file", path)
	c := newClient(t, q.Addr(t))
	assert.EqualError(t, c.Ping(ctxDeadline(t)).Err(), "NOAUTH Authentication required.")
}
