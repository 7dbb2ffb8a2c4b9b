package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// env returns a lookupEnv that sees only vars.
func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// writeFile writes a config file into the test's temp folder and returns its path.
func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rlstore.yaml")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func load(t *testing.T, args []string, vars map[string]string) (config, error) {
	t.Helper()
	var out bytes.Buffer
	return loadConfig(args, env(vars), &out)
}

func TestDefaults(t *testing.T) {
	c, err := load(t, nil, nil)
	require.NoError(t, err)
	assert.Equal(t, defaultConfig(), c)
	assert.Equal(t, config{
		Bind: "127.0.0.1", Port: 6379, ProtectedMode: true, MaxClients: 10000,
		MaxRequestBytes: 1 << 20, MaxPolicies: 10000, ReserveExpiry: "commit", ClientOutput: 64 << 20, ClientsMemory: 256 << 20, Shards: 256, Hz: 10, SweepBudget: 16384, AppendFsync: "everysec",
		SaveInterval: 5 * time.Minute, LogFormat: "text", LogLevel: "info", ShutdownTimeout: 10 * time.Second,
		SlowlogSlower: 10000, SlowlogMaxLen: 128, AuthFailLimit: 10, AuthFailWindow: time.Minute, TLSAuthClients: "yes", DebugCommand: "no",
		Cluster:  clusterFlags{Unreachable: "error", Timeout: time.Second, Timing: "lan", LeaveTimeout: 10 * time.Second},
		Replicas: replicaFlags{Count: 1, Interval: 100 * time.Millisecond},
		Gateway:  gatewayFlags{Port: -1, Lean: true},
		Region:   regionFlags{Sync: 100 * time.Millisecond, Escrow: 0.1, Reserve: 0.5, Partition: "share", MaxSkew: time.Second, MaxKeys: 1000000},
	}, c)
	assert.Equal(t, "127.0.0.1:6379", c.addr())
}

func TestPrecedence(t *testing.T) {
	file := writeFile(t, "port: 7002\nmaxmemory: 2mb\nlog-level: warn\n")
	vars := map[string]string{
		"RLSTORE_PORT": "7001", "RLSTORE_MAXMEMORY": "1mb", "RLSTORE_LOG_LEVEL": "debug",
		"RLSTORE_MAX_KEYS": "500", "RLSTORE_REQUIREPASS": "",
	}
	tests := []struct {
		name     string
		args     []string
		vars     map[string]string
		wantPort int
		wantMem  int64
		wantKeys int64
	}{
		{"defaults", nil, nil, 6379, 0, 0},
		{"env over defaults", nil, vars, 7001, 1 << 20, 500},
		{"file over defaults", []string{"--config", file}, nil, 7002, 2 << 20, 0},
		{"file over env", []string{"--config", file}, vars, 7002, 2 << 20, 500},
		{"flags over file and env", []string{"--config", file, "--port", "7003", "--max-keys=9"}, vars, 7003, 2 << 20, 9},
		{"config file named by env", nil, map[string]string{"RLSTORE_CONFIG": file, "RLSTORE_PORT": "7001"}, 7002, 2 << 20, 0},
		{"config file as first argument, redis-server style", []string{file, "--port", "7004"}, nil, 7004, 2 << 20, 0},
		{"single dash flags", []string{"-port", "7005"}, nil, 7005, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := load(t, tt.args, tt.vars)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPort, c.Port, "port")
			assert.Equal(t, tt.wantMem, c.MaxMemory, "maxmemory")
			assert.Equal(t, tt.wantKeys, c.MaxKeys, "max-keys")
		})
	}
}

// TestReserveExpiryReachesTheStore: --reserve-expiry cancel makes the
// store (and the replicas' copies, made alike) give expired reservations
// back, with the way to find the keys a ledger's reservations are charged
// to; commit, the default, keeps them charged.
func TestReserveExpiryReachesTheStore(t *testing.T) {
	c, err := load(t, nil, nil)
	require.NoError(t, err)
	assert.False(t, c.shardConfig().CancelExpired)
	c, err = load(t, []string{"--reserve-expiry", "cancel"}, nil)
	require.NoError(t, err)
	sc := c.shardConfig()
	assert.True(t, sc.CancelExpired)
	require.NotNil(t, sc.Charged)
	k, ok := sc.Charged(nil, policy.AppendLedgerKey(nil, []byte("k")), 0)
	assert.True(t, ok)
	assert.Equal(t, []byte("k"), k)
}

func TestEnvNames(t *testing.T) {
	c, err := load(t, nil, map[string]string{
		"RLSTORE_BIND": "::1", "RLSTORE_PROTECTED_MODE": "no", "RLSTORE_MAX_REQUEST_BYTES": "64kb",
		"RLSTORE_LOG_FORMAT": "JSON", "RLSTORE_SHUTDOWN_TIMEOUT": "3", "RLSTORE_SHARDS": "16",
		"RLSTORE_REQUIREPASS": "s3cret", "RLSTORE_MAXCLIENTS": "7", "RLSTORE_APPENDFSYNC": "always",
	})
	require.NoError(t, err)
	assert.Equal(t, "::1", c.Bind)
	assert.Equal(t, "[::1]:6379", c.addr())
	assert.False(t, c.ProtectedMode)
	assert.Equal(t, int64(64<<10), c.MaxRequestBytes)
	assert.Equal(t, "json", c.LogFormat)
	assert.Equal(t, 3*time.Second, c.ShutdownTimeout)
	assert.Equal(t, 16, c.Shards)
	assert.Equal(t, "s3cret", c.RequirePass)
	assert.Equal(t, 7, c.MaxClients)
	assert.Equal(t, "always", c.AppendFsync)
}

func TestConfigFileValues(t *testing.T) {
	file := writeFile(t, `# comment
bind: 127.0.0.2
protected-mode: no
requirepass: "p w"
maxmemory: 1GB
max-request-bytes: 1048576
shutdown-timeout: 1m30s
log-format: json
data-dir: ~
`)
	c, err := load(t, []string{"--config", file}, nil)
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.2", c.Bind)
	assert.False(t, c.ProtectedMode)
	assert.Equal(t, "p w", c.RequirePass)
	assert.Equal(t, int64(1<<30), c.MaxMemory)
	assert.Equal(t, int64(1<<20), c.MaxRequestBytes)
	assert.Equal(t, 90*time.Second, c.ShutdownTimeout)
	assert.Equal(t, "json", c.LogFormat)
	assert.Empty(t, c.DataDir, "a null value leaves the option unset")
}

func TestExampleConfigFileLoads(t *testing.T) {
	c, err := load(t, []string{"rlstore.example.yaml"}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1<<30), c.MaxMemory)
}

func TestEmptyConfigFile(t *testing.T) {
	c, err := load(t, []string{"--config", writeFile(t, "")}, nil)
	require.NoError(t, err)
	assert.Equal(t, 6379, c.Port)
}

func TestConfigFileErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"unknown option", "prot: 1\n", `line 1: unknown option "prot"`},
		{"nested value", "port:\n  a: 1\n", "port: want a single value"},
		{"list value", "bind: [a, b]\n", "bind: want a single value"},
		{"set twice", "port: 1\nport: 2\n", "port is set twice"},
		{"config in config", "config: other.yaml\n", "config cannot name another config file"},
		{"bad value", "\n\nmaxmemory: lots\n", `line 3: maxmemory: bad size "lots"`},
		{"not a mapping", "- port\n", "want a mapping"},
		{"bad yaml", "port: [\n", "yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := load(t, []string{"--config", writeFile(t, tt.text)}, nil)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.Contains(t, err.Error(), "config file")
		})
	}
	_, err := load(t, []string{"--config", writeFile(t, "port: 70000\n")}, nil)
	assert.ErrorContains(t, err, "--port 70000 is out of range", "values from the file are validated too")
	_, err = load(t, []string{"--config", filepath.Join(t.TempDir(), "missing.yaml")}, nil)
	assert.ErrorContains(t, err, "config file")
}

func TestValidationErrors(t *testing.T) {
	notDir := writeFile(t, "")
	tests := []struct {
		args []string
		vars map[string]string
		want string
	}{
		{[]string{"--port", "-1"}, nil, "--port -1 is out of range 0-65535"},
		{[]string{"--port", "65536"}, nil, "--port 65536 is out of range"},
		{[]string{"--port", "http"}, nil, `invalid value "http" for flag --port`},
		{nil, map[string]string{"RLSTORE_PORT": "x"}, "environment RLSTORE_PORT"},
		{[]string{"--maxmemory", "10xb"}, nil, `bad size "10xb"`},
		{[]string{"--maxmemory", "-1"}, nil, `bad size "-1"`},
		{[]string{"--maxmemory", "1.5gb"}, nil, `bad size "1.5gb"`},
		{[]string{"--maxmemory", "99999999999gb"}, nil, "too large"},
		{[]string{"--max-request-bytes", "100"}, nil, "--max-request-bytes must be at least 1kb"},
		{[]string{"--max-keys", "-5"}, nil, "--max-keys must not be negative"},
		{[]string{"--maxclients", "0"}, nil, "--maxclients must be between 1 and 4294967295"},
		{[]string{"--shards", "3"}, nil, "--shards must be a power of two"},
		{[]string{"--shards", "0"}, nil, "--shards must be a power of two"},
		{[]string{"--protected-mode", "maybe"}, nil, `"maybe" is not yes or no`},
		{[]string{"--appendfsync", "sometimes"}, nil, "not one of always, everysec, no"},
		{[]string{"--log-format", "xml"}, nil, "not one of text, json"},
		{[]string{"--reserve-expiry", "later"}, nil, "not one of commit, cancel"},
		{[]string{"--log-level", "trace"}, nil, "not one of debug, info, warn, error"},
		{[]string{"--hz", "0"}, nil, "--hz must be between 1 and 500"},
		{[]string{"--hz", "501"}, nil, "--hz must be between 1 and 500"},
		{[]string{"--sweep-budget", "0"}, nil, "--sweep-budget must be at least 1"},
		{[]string{"--shutdown-timeout", "0"}, nil, "--shutdown-timeout must be positive"},
		{[]string{"--shutdown-timeout", "soon"}, nil, `bad duration "soon"`},
		{[]string{"--bind", "example.com"}, nil, "is not an IP address"},
		{[]string{"--data-dir", notDir}, nil, "is not a folder"},
		{[]string{"--join", "127.0.0.1:1", "--tls-cluster", "yes"}, nil, "--tls-cluster yes needs --tls-port and --tls-ca-cert-file"},
		{[]string{"--replicas", "2"}, nil, "--replicas must be 0 or 1"},
		{[]string{"--replica-interval", "0"}, nil, "--replica-interval must be positive"},
		{[]string{"--nope"}, nil, "flag provided but not defined: --nope"},
		{[]string{"--port", "1", "extra"}, nil, `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		_, err := load(t, tt.args, tt.vars)
		if assert.Error(t, err, "loadConfig(%q, %v)", tt.args, tt.vars) {
			assert.Contains(t, err.Error(), tt.want, "loadConfig(%q, %v)", tt.args, tt.vars)
		}
	}
}

func TestProtectedMode(t *testing.T) {
	dir := t.TempDir()
	acl := func(name, text string) string {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return path
	}
	allPass := acl("all.acl", "user default on >pw ~* +@all\nuser rl on >pw2 ~api:* +rl.slide\n")
	openUser := acl("open.acl", "user default on >pw ~* +@all\nuser guest on nopass ~* +@all\n")
	noDefault := acl("nodefault.acl", "user rl on >pw2 ~api:* +rl.slide\n")
	tests := []struct {
		args   []string
		refuse bool
	}{
		{[]string{"--bind", "127.0.0.1"}, false},
		{[]string{"--bind", "127.1.2.3"}, false},
		{[]string{"--bind", "::1"}, false},
		{[]string{"--bind", "localhost"}, false},
		{[]string{"--bind", "0.0.0.0"}, true},
		{[]string{"--bind", "::"}, true},
		{[]string{"--bind", "10.1.2.3"}, true},
		{[]string{"--bind", "0.0.0.0", "--requirepass", "x"}, false},
		{[]string{"--bind", "0.0.0.0", "--protected-mode", "no"}, false},
		{[]string{"--bind", "0.0.0.0", "--protected-mode=no"}, false},
		{[]string{"--bind", "0.0.0.0", "--aclfile", allPass}, false},
		{[]string{"--bind", "0.0.0.0", "--aclfile", openUser}, true},
		{[]string{"--bind", "0.0.0.0", "--aclfile", noDefault}, true},
		{[]string{"--bind", "0.0.0.0", "--aclfile", noDefault, "--requirepass", "x"}, false},
		{[]string{"--bind", "0.0.0.0", "--aclfile", openUser, "--requirepass", "x"}, true},
	}
	for _, tt := range tests {
		_, err := load(t, tt.args, nil)
		if tt.refuse {
			assert.ErrorContains(t, err, "protected mode: refusing to listen on", "loadConfig(%q)", tt.args)
			assert.ErrorContains(t, err, "--requirepass", "loadConfig(%q)", tt.args)
		} else {
			assert.NoError(t, err, "loadConfig(%q)", tt.args)
		}
	}
}

func TestHelp(t *testing.T) {
	var out bytes.Buffer
	_, err := loadConfig([]string{"--help"}, env(nil), &out)
	require.ErrorIs(t, err, flag.ErrHelp)
	var c config
	newFlagSet(&c).VisitAll(func(f *flag.Flag) {
		assert.Contains(t, out.String(), "--"+f.Name+" ")
		assert.Contains(t, out.String(), "["+envName(f.Name)+"]")
	})
	assert.Contains(t, out.String(), "(default 127.0.0.1)")
	assert.Contains(t, out.String(), "(default 1mb)")
	assert.NotContains(t, out.String(), "not used yet")
	assert.Contains(t, out.String(), "(default 5m0s)", "--save-interval")
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
	}{
		{"0", 0}, {"123", 123}, {"1k", 1000}, {"1kb", 1024}, {"1K", 1000}, {"1KB", 1024},
		{"100mb", 100 << 20}, {"2m", 2e6}, {"1gb", 1 << 30}, {"3G", 3e9}, {" 5kb ", 5 << 10},
	}
	for _, tt := range tests {
		got, err := parseSize(tt.in)
		if assert.NoError(t, err, "parseSize(%q)", tt.in) {
			assert.Equal(t, tt.want, got, "parseSize(%q)", tt.in)
		}
	}
	for _, in := range []string{"", "kb", "1b", "1tb", "-1", "+1", "1 kb", "0x10", "1e3"} {
		_, err := parseSize(in)
		assert.Error(t, err, "parseSize(%q)", in)
	}
	for n, want := range map[int64]string{0: "0", 1000: "1000", 1024: "1kb", 512 << 20: "512mb", 2 << 30: "2gb", 1536: "1536"} {
		assert.Equal(t, want, formatSize(n), "formatSize(%d)", n)
	}
}
