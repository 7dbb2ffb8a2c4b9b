package main

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tlsNodeArgs returns the flags of a --tls-cluster node that requires
// peers' certificates, on a free TLS port.
func tlsNodeArgs(t *testing.T, ca *testCA, serial int64) []string {
	return append(tlsFlags(t, ca, serial, testport.Stable(t)), "--cluster-timeout", "500ms")
}

// tlsFlags writes a node certificate (server and client use) signed by ca
// and returns the flags of a node on tlsPort whose cluster or region links
// are mutual TLS.
func tlsFlags(t *testing.T, ca *testCA, serial int64, tlsPort string) []string {
	t.Helper()
	dir := t.TempDir()
	c, k := ca.issueFor(t, serial, x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	certFile, keyFile, caFile := filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key"), filepath.Join(dir, "ca.crt")
	require.NoError(t, os.WriteFile(certFile, c, 0o600))
	require.NoError(t, os.WriteFile(keyFile, k, 0o600))
	require.NoError(t, os.WriteFile(caFile, ca.pem, 0o600))
	return []string{"--tls-port", tlsPort, "--tls-cert-file", certFile, "--tls-key-file", keyFile,
		"--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes", "--tls-cluster", "yes"}
}

var tlsPeerLine = regexp.MustCompile(`msg="cluster: joined gossip" .* tls=(\S+) .* tls_cluster=true`)

// TestClusterProcessTLS: with --tls-cluster yes two nodes share one limit
// per key through forwards over mutual TLS; a third node whose certificate
// comes from another CA joins gossip but can neither forward to them nor be
// forwarded to.
func TestClusterProcessTLS(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	p0 := startClusterProc(t, "p0", "", tlsNodeArgs(t, ca, 10)...)
	p1 := startClusterProc(t, "p1", p0.gossip, tlsNodeArgs(t, ca, 11)...)
	assert.NotEmpty(t, p1.WaitLog(t, tlsPeerLine)[1], "the TLS address is advertised")
	waitClusterSize(t, p0, 2)
	waitClusterSize(t, p1, 2)
	c0, c1 := newClient(t, p0.addr), newClient(t, p1.addr)
	key := keyOwnedBy(t, c0, "p1", "tls:")
	assert.Equal(t, int64(1), slide(t, c0, key)[0], "forwarded over TLS to p1")
	assert.Equal(t, int64(1), slide(t, c1, key)[0], "at the owner")
	assert.Equal(t, int64(1), slide(t, c0, key)[0], "forwarded again")
	assert.Equal(t, int64(0), slide(t, c1, key)[0], "one limit of 3 across both nodes")

	p2 := startClusterProc(t, "p2", p0.gossip, tlsNodeArgs(t, other, 12)...)
	waitClusterSize(t, p0, 3)
	waitClusterSize(t, p2, 3)
	c2 := newClient(t, p2.addr)
	ctx := context.Background()
	from2 := keyOwnedBy(t, c2, "p0", "from2:")
	err := c2.Do(ctx, "RL.SLIDE", from2, 3, 3600).Err()
	require.Error(t, err, "p2 cannot reach p0: p0's certificate is from a CA p2 does not trust")
	assert.Contains(t, err.Error(), "CLUSTERDOWN")
	to2 := keyOwnedAfter(t, c0, "p2", "p1", "to2:") // p1 hands it over: p0 does not serve it on
	err = c0.Do(ctx, "RL.SLIDE", to2, 3, 3600).Err()
	require.Error(t, err, "p0 cannot reach p2: p2's certificate is from a CA p0 does not trust")
	assert.Contains(t, err.Error(), "CLUSTERDOWN")
	assert.Equal(t, int64(0), slide(t, c0, key)[0], "the good pair still forwards: "+fmt.Sprint(key))
}
