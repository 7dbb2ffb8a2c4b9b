package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "rlstore test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key signed by ca, for 127.0.0.1 as a
// server or as a client, with serial as its serial number.
func (ca *testCA) issue(t *testing.T, serial int64, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	if client {
		return ca.issueFor(t, serial, x509.ExtKeyUsageClientAuth)
	}
	return ca.issueFor(t, serial, x509.ExtKeyUsageServerAuth)
}

// issueFor is issue for the given uses: a cluster node's certificate is
// both a server's and a client's.
func (ca *testCA) issueFor(t *testing.T, serial int64, usage ...x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "rlstore test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: usage,
		KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// tlsFiles writes ca's certificate and a server certificate into dir.
func tlsFiles(t *testing.T, dir string, ca *testCA, serial int64) (certFile, keyFile, caFile string) {
	t.Helper()
	c, k := ca.issue(t, serial, false)
	certFile, keyFile, caFile = filepath.Join(dir, "server.crt"), filepath.Join(dir, "server.key"), filepath.Join(dir, "ca.crt")
	writeAtomically(t, keyFile, k)
	writeAtomically(t, certFile, c)
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	return certFile, keyFile, caFile
}

func writeAtomically(t *testing.T, path string, b []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path+".tmp", b, 0o600))
	require.NoError(t, os.Rename(path+".tmp", path))
}

func tlsClient(t *testing.T, addr string, ca *testCA, cert *tls.Certificate) *redis.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if cert != nil {
		cfg.Certificates = []tls.Certificate{*cert}
	}
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, MaxRetries: -1, PoolSize: 4})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func startTLSProc(t *testing.T, dir string, ca *testCA, auth string) (plain, tlsAddr string, p *proc) {
	t.Helper()
	certFile, keyFile, caFile := tlsFiles(t, dir, ca, 2)
	p = startProc(t, nil, "--port", "0", "--tls-port", testport.Stable(t), "--tls-cert-file", certFile,
		"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", auth)
	plain = p.Addr(t)
	tlsAddr = p.WaitLog(t, regexp.MustCompile(`msg="TLS listening" addr=(\S+)`))[1]
	return plain, tlsAddr, p
}

func TestProcessTLSBesidePlain(t *testing.T) {
	ca := newTestCA(t)
	plain, tlsAddr, _ := startTLSProc(t, t.TempDir(), ca, "no")
	ctx := t.Context()
	require.NoError(t, newClient(t, plain).Do(ctx, "RL.SLIDE", "k", 2, 10).Err())
	tc := tlsClient(t, tlsAddr, ca, nil)
	v, err := tc.Do(ctx, "RL.SLIDE", "k", 2, 10).Slice()
	require.NoError(t, err)
	assert.Equal(t, int64(0), v[2], "one store behind both ports")
	raw, err := net.Dial("tcp", tlsAddr)
	require.NoError(t, err)
	defer raw.Close()
	_, _ = raw.Write([]byte("PING\r\n"))
	_ = raw.SetReadDeadline(time.Now().Add(deadline))
	buf := make([]byte, 64)
	n, _ := raw.Read(buf)
	assert.NotContains(t, string(buf[:n]), "PONG", "plain text is not served on the TLS port")
}

func TestProcessMutualTLS(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	_, tlsAddr, _ := startTLSProc(t, dir, ca, "yes")
	ctx := t.Context()
	assert.Error(t, tlsClient(t, tlsAddr, ca, nil).Ping(ctx).Err(), "no client certificate")
	other := newTestCA(t)
	oc, ok := other.issue(t, 9, true)
	wrong, err := tls.X509KeyPair(oc, ok)
	require.NoError(t, err)
	assert.Error(t, tlsClient(t, tlsAddr, ca, &wrong).Ping(ctx).Err(), "a certificate from another CA")
	cc, ck := ca.issue(t, 3, true)
	good, err := tls.X509KeyPair(cc, ck)
	require.NoError(t, err)
	assert.NoError(t, tlsClient(t, tlsAddr, ca, &good).Ping(ctx).Err())

	if out, err := exec.Command("redis-cli", "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--tls") {
		t.Skip("redis-cli with TLS support is not installed")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.crt"), cc, 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "client.key"), ck, 0o600))
	host, port, _ := net.SplitHostPort(tlsAddr)
	out, err := exec.Command("redis-cli", "--tls", "--cacert", filepath.Join(dir, "ca.crt"),
		"--cert", filepath.Join(dir, "client.crt"), "--key", filepath.Join(dir, "client.key"),
		"-h", host, "-p", port, "RL.SLIDE", "cli", "5", "10").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "1\n5\n4\n0\n", string(out[:8]), "redis-cli --tls got the decision: %s", out)
}

// TestProcessTLSReloadUnderLoad replaces the certificate while clients keep
// deciding over TLS: after SIGHUP new connections get the new certificate,
// and no request on a connection made before fails.
func TestProcessTLSReloadUnderLoad(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	_, tlsAddr, p := startTLSProc(t, dir, ca, "no")
	ctx, cancel := context.WithTimeout(t.Context(), deadline)
	defer cancel()
	old := tlsClient(t, tlsAddr, ca, nil)
	require.NoError(t, old.Ping(ctx).Err())
	errs := make(chan error, 1)
	stop := make(chan struct{})
	go func() {
		defer close(errs)
		for i := 0; i < 200000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := old.Do(ctx, "RL.SLIDE", "load", 1000000, 10).Err(); err != nil {
				errs <- err
				return
			}
		}
	}()
	tlsFiles(t, dir, ca, 77)
	require.NoError(t, p.Cmd.Process.Signal(syscall.SIGHUP))
	p.WaitLog(t, regexp.MustCompile(`TLS certificates reloaded`))
	serial := func() int64 {
		pool := x509.NewCertPool()
		pool.AddCert(ca.cert)
		conn, err := tls.Dial("tcp", tlsAddr, &tls.Config{RootCAs: pool})
		require.NoError(t, err)
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.Int64()
	}
	assert.Equal(t, int64(77), serial(), "a new connection gets the new certificate")
	close(stop)
	assert.NoError(t, <-errs, "a connection made before the reload kept working")
	assert.NoError(t, old.Ping(ctx).Err())
}
