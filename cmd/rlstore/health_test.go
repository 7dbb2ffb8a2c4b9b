package main

import (
	"bytes"
	"crypto/x509"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runHealth runs `rlstore health args...` as the real binary, as Docker's
// HEALTHCHECK does, with env on top of an environment without RLSTORE_*.
func runHealth(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(rlstoreBin, append([]string{"health"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee)
		return ee.ExitCode(), out.String(), errb.String()
	}
	return 0, out.String(), errb.String()
}

// assertOneLine checks the health check said one line.
func assertOneLine(t *testing.T, s string) {
	t.Helper()
	assert.Equal(t, 1, strings.Count(s, "\n"), "one line: %q", s)
}

func TestHealthReadyz(t *testing.T) {
	p := startProc(t, nil, "--port", "0", "--metrics-addr", "127.0.0.1:0")
	p.Addr(t)
	metrics := p.WaitLog(t, regexp.MustCompile(`metrics endpoint listening.*addr=(\S+)`))[1]
	code, out, errOut := runHealth(t, nil, "--metrics-addr", metrics)
	assert.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "/readyz answered 200 ready")
	assertOneLine(t, out)

	// The same configuration from the environment, as the container image gives it.
	_, port, _ := net.SplitHostPort(metrics)
	code, out, _ = runHealth(t, []string{"RLSTORE_METRICS_ADDR=0.0.0.0:" + port})
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "http://127.0.0.1:"+port+"/readyz", "0.0.0.0 is checked on loopback")

	p.Kill()
	code, out, errOut = runHealth(t, nil, "--metrics-addr", metrics)
	assert.Equal(t, 1, code, "a dead server")
	assert.Empty(t, out)
	assert.Contains(t, errOut, "rlstore health: not ready: ")
	assertOneLine(t, errOut)
}

func TestHealthPingWithPassword(t *testing.T) {
	p := startProc(t, []string{"RLSTORE_REQUIREPASS=sesame"}, "--port", "0")
	_, port, _ := net.SplitHostPort(p.Addr(t))
	code, out, errOut := runHealth(t, []string{"RLSTORE_REQUIREPASS=sesame"}, "--port", port)
	assert.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "answered PONG")

	code, _, errOut = runHealth(t, []string{"RLSTORE_REQUIREPASS=wrong"}, "--port", port)
	assert.Equal(t, 1, code, "a wrong password is not healthy")
	assert.Contains(t, errOut, "AUTH on 127.0.0.1:"+port)
	assertOneLine(t, errOut)

	p.Kill()
	code, _, errOut = runHealth(t, []string{"RLSTORE_REQUIREPASS=sesame"}, "--port", port)
	assert.Equal(t, 1, code, "a dead server")
	assert.Contains(t, errOut, "connection refused")
	assertOneLine(t, errOut)
}

// TestHealthPingTLS checks the TLS path: with --port 0 only the TLS port
// is known, and under --tls-auth-clients yes the check presents the
// server's own certificate, so that needs the clientAuth usage.
func TestHealthPingTLS(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t)
	c, k := ca.issueFor(t, 2, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	certFile, keyFile, caFile := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key"), filepath.Join(dir, "ca.crt")
	writeAtomically(t, certFile, c)
	writeAtomically(t, keyFile, k)
	writeAtomically(t, caFile, ca.pem)
	tlsPort := testport.Stable(t)
	args := []string{"--tls-port", tlsPort, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes"}
	p := startProc(t, nil, append([]string{"--port", "0"}, args...)...)
	p.WaitLog(t, regexp.MustCompile(`msg="TLS listening"`))
	code, out, errOut := runHealth(t, nil, append([]string{"--port", "0"}, args...)...)
	assert.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "PING on 127.0.0.1:"+tlsPort+" answered PONG")

	other := newTestCA(t) // a server whose chain the CA file does not vouch for
	writeAtomically(t, filepath.Join(dir, "other.crt"), other.pem)
	args[7] = filepath.Join(dir, "other.crt")
	code, _, errOut = runHealth(t, nil, append([]string{"--port", "0"}, args...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "certificate")
}

func TestHealthNothingToCheck(t *testing.T) {
	code, _, errOut := runHealth(t, nil, "--port", "0")
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "nothing to check")
	code, _, errOut = runHealth(t, nil, "--no-such-flag")
	assert.Equal(t, 2, code, "bad flags")
	assert.Contains(t, errOut, "--no-such-flag")
}

func TestDialable(t *testing.T) {
	for in, want := range map[string]string{
		"0.0.0.0:9121":  "127.0.0.1:9121",
		":9121":         "127.0.0.1:9121",
		"[::]:6379":     "[::1]:6379",
		"10.0.0.7:6379": "10.0.0.7:6379",
	} {
		assert.Equal(t, want, dialable(in), "dialable(%q)", in)
	}
}

// TestHealthNotReadyBeforeMeetingPeers: a node started with --join that
// has not met another member answers keyed commands with -CLUSTERDOWN, so
// /readyz, and with it a Kubernetes readiness probe and rlstore health,
// says it is not ready; once a member joins it, it is.
func TestHealthNotReadyBeforeMeetingPeers(t *testing.T) {
	gossip := "127.0.0.1:" + testport.Stable(t)
	p := startProc(t, nil, "--port", "0", "--metrics-addr", "127.0.0.1:0", "--node-name", "lonely",
		"--cluster-addr", gossip, "--join", "127.0.0.1:"+testport.Stable(t), "--cluster-timing", "fast")
	p.Addr(t)
	metrics := p.WaitLog(t, regexp.MustCompile(`metrics endpoint listening.*addr=(\S+)`))[1]
	code, _, errOut := runHealth(t, nil, "--metrics-addr", metrics)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "503: not ready: has not met a member of its cluster yet")

	other := startProc(t, nil, "--port", "0", "--node-name", "other", "--cluster-addr", "127.0.0.1:0",
		"--join", gossip, "--cluster-timing", "fast")
	other.Addr(t)
	require.Eventually(t, func() bool {
		code, _, _ = runHealth(t, nil, "--metrics-addr", metrics)
		return code == 0
	}, deadline, 100*time.Millisecond, "ready once it has met a member")
}
