package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTrustRefusesToStart is finding 4 and the start half of finding 1: a
// node refuses a cluster that strangers could join (gossip beyond loopback
// without a key) or act in (no secret for the handshake), naming the flag
// to set. It checks the configuration only: nothing is sent.
func TestTrustRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	acl := filepath.Join(dir, "users.acl")
	require.NoError(t, os.WriteFile(acl, []byte("user default off\nuser admin on >adminpw ~* +@all\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, []byte("\n"), 0o600))
	key := "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
	cases := []struct {
		args []string
		want string // "" to start
	}{
		{[]string{"--cluster-addr", "127.0.0.1:7101"}, ""}, // the README's: loopback, no password
		{[]string{"--join", "127.0.0.1:7101"}, ""},
		{[]string{"--cluster-addr", "10.231.25.1:7946", "--requirepass", "pw"}, "refusing to gossip on 10.231.25.1:7946 without --cluster-key"},
		{[]string{"--cluster-addr", "127.0.0.1:7946", "--cluster-advertise", "10.231.25.1:7946", "--cluster-secret", "s"}, "--cluster-insecure yes"},
		{[]string{"--cluster-addr", "10.231.25.1:7946", "--cluster-insecure", "yes", "--cluster-secret", "s"}, ""},
		{[]string{"--cluster-addr", "10.231.25.1:7946", "--cluster-insecure", "yes"}, "--cluster-secret-file"},
		{[]string{"--cluster-addr", "10.231.25.1:7946", "--cluster-key", key}, ""},
		{[]string{"--cluster-addr", "127.0.0.1:7101", "--aclfile", acl}, "set --cluster-key (or --cluster-keyring), --cluster-secret, --cluster-secret-file or --requirepass"},
		{[]string{"--cluster-addr", "127.0.0.1:7101", "--aclfile", acl, "--cluster-secret", "s"}, ""},
		{[]string{"--cluster-addr", "127.0.0.1:7101", "--bind", "0.0.0.0", "--protected-mode", "no"}, "--cluster-secret"},
		{[]string{"--cluster-addr", "127.0.0.1:7101", "--bind", "0.0.0.0", "--requirepass", "pw"}, ""},
		{[]string{"--cluster-addr", "127.0.0.1:7101", "--cluster-secret-file", empty}, "is empty"},
		{[]string{"--cluster-addr", "127.0.0.1:7101", "--cluster-secret", "a", "--cluster-secret-file", empty}, "both set"},
		{[]string{"--cluster-secret", "s"}, "cluster options need --cluster-addr or --join"},
	}
	for _, tc := range cases {
		_, err := load(t, tc.args, nil)
		if tc.want == "" {
			assert.NoError(t, err, "%v", tc.args)
			continue
		}
		if assert.Error(t, err, "%v", tc.args) {
			assert.Contains(t, err.Error(), tc.want, "%v", tc.args)
		}
	}
}

func TestClusterSecretFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(path, []byte("s3cret\n"), 0o600))
	c, err := load(t, []string{"--cluster-addr", "127.0.0.1:7101", "--cluster-secret-file", path}, nil)
	require.NoError(t, err)
	assert.Equal(t, "s3cret", c.Cluster.Secret)
	secret, old := c.clusterSecrets(nil, nil)
	assert.Equal(t, []byte("s3cret"), secret)
	assert.Empty(t, old)
}
