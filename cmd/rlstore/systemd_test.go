package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The machines these tests run on do not boot with systemd (PID 1 is not
// systemd), so the unit is never started by systemd here: it is checked by
// `systemd-analyze verify`, which reads units offline, by rlstore's own flag
// parsing, and by starting ExecStart the way systemd would.

const (
	unitFile      = "../../deploy/systemd/rlstore.service"
	unitConfig    = "../../deploy/systemd/rlstore.yaml"
	unitConfigDst = "/etc/rlstore/rlstore.yaml" // where ExecStart reads it
)

// unitKeys parses a unit file into section.Key → values, in order.
func unitKeys(t *testing.T, text string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	section := ""
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "["):
			section = strings.Trim(line, "[]")
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "unit line %q", line)
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	return out
}

func one(t *testing.T, keys map[string][]string, key string) string {
	t.Helper()
	require.Len(t, keys[key], 1, "%s is set once", key)
	return keys[key][0]
}

// execStart is the unit's ExecStart with systemd's specifiers replaced:
// %S the root of state directories, %d the credentials directory; and the
// config file at cfgPath.
func execStart(t *testing.T, keys map[string][]string, stateRoot, credDir, cfgPath string) []string {
	t.Helper()
	argv := strings.Fields(one(t, keys, "Service.ExecStart"))
	for i, a := range argv {
		a = strings.ReplaceAll(a, "%S", stateRoot)
		a = strings.ReplaceAll(a, "%d", credDir)
		if a == unitConfigDst {
			a = cfgPath
		}
		argv[i] = a
	}
	return argv
}

func TestSystemdUnitVerifies(t *testing.T) {
	analyze := needTool(t, "systemd-analyze", "systemd")
	text := readFile(t, unitFile)
	// verify checks that ExecStart's program exists: point it at the one built.
	text = strings.Replace(text, "ExecStart=/usr/local/bin/rlstore ", "ExecStart="+rlstoreBin+" ", 1)
	unit := filepath.Join(t.TempDir(), "rlstore.service")
	require.NoError(t, os.WriteFile(unit, []byte(text), 0o644))
	out, err := exec.Command(analyze, "verify", unit).CombinedOutput()
	require.NoError(t, err, "%s", out)
	// verify exits 0 on an unknown key or a bad value, and says so.
	assert.Empty(t, strings.TrimSpace(string(out)), "systemd-analyze verify has warnings")
}

func TestSystemdUnitKeys(t *testing.T) {
	keys := unitKeys(t, readFile(t, unitFile))
	for key, want := range map[string]string{
		"Service.Type":            "notify", // sdNotify sends READY=1
		"Service.Restart":         "on-failure",
		"Service.DynamicUser":     "yes",
		"Service.ProtectSystem":   "strict",
		"Service.NoNewPrivileges": "yes",
		"Service.StateDirectory":  "rlstore",
		"Service.ProtectHome":     "yes",
		"Service.PrivateTmp":      "yes",
		"Install.WantedBy":        "multi-user.target",
	} {
		assert.Equal(t, want, one(t, keys, key), key)
	}
	assert.Equal(t, []string{""}, keys["Service.CapabilityBoundingSet"], "no capabilities")

	// ExecStart parses with rlstore's own flags and the example config, and
	// keeps its data in the unit's state directory.
	argv := execStart(t, keys, "/var/lib", "/run/credentials/rlstore.service", unitConfig)
	assert.Equal(t, "/usr/local/bin/rlstore", argv[0])
	cfg, err := loadConfig(slicesWithout(argv[1:], "--requirepass-file"), func(string) (string, bool) { return "", false }, nil)
	require.NoError(t, err, "ExecStart %v", argv)
	assert.Equal(t, "/var/lib/"+one(t, keys, "Service.StateDirectory"), cfg.DataDir)
	cred, _, _ := strings.Cut(one(t, keys, "Service.LoadCredential"), ":")
	assert.Contains(t, argv, "/run/credentials/rlstore.service/"+cred, "the password comes from the loaded credential")

	// SIGTERM's leave, drain and gossip leave all fit before SIGKILL.
	stop, err := time.ParseDuration(one(t, keys, "Service.TimeoutStopSec"))
	require.NoError(t, err)
	need := cfg.Cluster.LeaveTimeout + cfg.ShutdownTimeout + time.Second
	assert.Greater(t, stop, need, "TimeoutStopSec %v must cover --cluster-leave-timeout + --shutdown-timeout + 1 s of gossip leave (%v) and a snapshot", stop, need)
}

// slicesWithout drops flag and its value from args: the test has no
// credential file to read.
func slicesWithout(args []string, flag string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		if args[i] == flag {
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}

// listenNotify listens where $NOTIFY_SOCKET will point.
func listenNotify(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

func readNotify(t *testing.T, conn *net.UnixConn) string {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(deadline)))
	buf := make([]byte, 4096)
	n, err := conn.Read(buf)
	require.NoError(t, err)
	return string(buf[:n])
}

// TestSystemdUnitStarts runs the unit's ExecStart as systemd would: the
// example config, a state directory, the password as a credential, and
// $NOTIFY_SOCKET, on which it must say READY=1 and, on SIGTERM, STOPPING=1.
func TestSystemdUnitStarts(t *testing.T) {
	keys := unitKeys(t, readFile(t, unitFile))
	dir := t.TempDir()
	stateRoot, credDir := filepath.Join(dir, "state"), filepath.Join(dir, "credentials")
	require.NoError(t, os.MkdirAll(filepath.Join(stateRoot, "rlstore"), 0o700))
	require.NoError(t, os.MkdirAll(credDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(credDir, "requirepass"), []byte("unit-test-password\n"), 0o400))
	cfgPath := filepath.Join(dir, "rlstore.yaml")
	require.NoError(t, os.WriteFile(cfgPath, []byte(readFile(t, unitConfig)), 0o644))
	sock := filepath.Join(dir, "notify")
	conn := listenNotify(t, sock)

	argv := execStart(t, keys, stateRoot, credDir, cfgPath)
	// Free ports instead of the config's fixed ones, on a shared machine.
	p := startProc(t, []string{"NOTIFY_SOCKET=" + sock}, append(argv[1:], "--port", "0", "--metrics-addr", "127.0.0.1:0")...)
	addr := p.Addr(t)
	assert.Equal(t, "READY=1\nSTATUS=ready to accept connections on "+addr, readNotify(t, conn))
	c := newClient(t, addr)
	assert.Error(t, c.Ping(t.Context()).Err(), "the credential's password is required")
	p.Signal(t, syscall.SIGTERM)
	assert.Equal(t, "STOPPING=1\nSTATUS=draining clients", readNotify(t, conn))
	assert.Equal(t, 0, p.ExitCode(t))
	entries, err := os.ReadDir(filepath.Join(stateRoot, "rlstore"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries, "the data dir is the unit's state directory")
}

// TestSdNotifyAbstract: an abstract $NOTIFY_SOCKET (@name), as systemd
// may give, and none at all.
func TestSdNotifyAbstract(t *testing.T) {
	name := fmt.Sprintf("@rlstore-test-notify-%d", os.Getpid())
	conn := listenNotify(t, name)
	env := func(k string) (string, bool) { return name, k == "NOTIFY_SOCKET" }
	require.NoError(t, sdNotify(env, "READY=1"))
	assert.Equal(t, "READY=1", readNotify(t, conn))
	none := func(string) (string, bool) { return "", false }
	assert.NoError(t, sdNotify(none, "READY=1"), "no NOTIFY_SOCKET: nothing to do")
}
