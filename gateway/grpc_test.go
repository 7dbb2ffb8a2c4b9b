package gateway_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"math/big"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
)

// TestHealth checks grpc.health.v1: SERVING only while the server is ready.
func TestHealth(t *testing.T) {
	var notReady atomic.Bool
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, ready: func() error {
		if notReady.Load() {
			return errors.New("loading")
		}
		return nil
	}})
	h := healthpb.NewHealthClient(r.conn)
	ctx := context.Background()
	for _, svc := range []string{"", "envoy.service.ratelimit.v3.RateLimitService"} {
		resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err)
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.Status, "%q", svc)
	}
	notReady.Store(true)
	resp, err := h.Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, resp.Status)
	_, err = h.Check(ctx, &healthpb.HealthCheckRequest{Service: "nope"})
	assert.Error(t, err)
}

// TestReflection checks that grpcurl's reflection lists the services.
func TestReflection(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	stream, err := reflectpb.NewServerReflectionClient(r.conn).ServerReflectionInfo(context.Background())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectpb.ServerReflectionRequest{MessageRequest: &reflectpb.ServerReflectionRequest_ListServices{}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.Name)
	}
	assert.Contains(t, names, "envoy.service.ratelimit.v3.RateLimitService")
	assert.Contains(t, names, "grpc.health.v1.Health")
}

// testCA makes a CA and a certificate it signs for 127.0.0.1.
func testCA(t *testing.T) (ca *x509.CertPool, leaf func(client bool) tls.Certificate) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	caCert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	serial := int64(2)
	return pool, func(client bool) tls.Certificate {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		serial++
		usage := x509.ExtKeyUsageServerAuth
		if client {
			usage = x509.ExtKeyUsageClientAuth
		}
		lt := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "leaf"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{usage}, KeyUsage: x509.KeyUsageDigitalSignature}
		d, err := x509.CreateCertificate(rand.Reader, lt, caCert, &k.PublicKey, key)
		require.NoError(t, err)
		return tls.Certificate{Certificate: [][]byte{d}, PrivateKey: k}
	}
}

// TestMutualTLS checks TLS with a client certificate required: a client
// with one is served, one without is refused.
func TestMutualTLS(t *testing.T) {
	pool, leaf := testCA(t)
	srvTLS := &tls.Config{Certificates: []tls.Certificate{leaf(false)}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	good := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{leaf(true)}, MinVersion: tls.VersionTLS12}
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, serverTLS: srvTLS, clientTLS: good})
	resp := r.ask(t, "api", 0, []string{"remote_address", "a"})
	assert.Equal(t, []uint32{2}, remaining(resp))

	bad := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}, serverTLS: srvTLS, clientTLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}})
	_, err := bad.call("api", 0, []string{"remote_address", "a"})
	assert.Error(t, err, "no client certificate")
}

// TestReloadUnderLoad checks a reload on file change while calls run: no
// call fails, a bad file keeps the configuration in force and is counted,
// and a good one takes over.
func TestReloadUnderLoad(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"api.yaml": basicYAML}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan struct{}, 1)
	require.NoError(t, r.svc.Watch(ctx, r.dir, hup, quiet()))
	var failed atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := r.call("api", 0, []string{"path", "/static/x"}); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	limitOf := func() uint32 {
		resp, err := r.call("api", 0, []string{"path", "/static/x"})
		if err != nil {
			return 0
		}
		return resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit()
	}
	writeFile(t, filepath.Join(r.dir, "api.yaml"), "domain: api\ndescriptors:\n  - key: path\n    rate_limt: {}\n")
	waitFor(t, func() bool { return r.svc.Stats.ConfigFailures.Load() >= 1 }, "the bad file is counted")
	assert.Equal(t, uint32(2), limitOf(), "the bad file keeps the old configuration")
	writeFile(t, filepath.Join(r.dir, "api.yaml"), bytes.NewBufferString(basicYAML).String()+"  - key: new\n    rate_limit: {unit: second, requests_per_unit: 9}\n")
	waitFor(t, func() bool {
		resp, err := r.call("api", 0, []string{"new", "x"})
		return err == nil && resp.Statuses[0].GetCurrentLimit().GetRequestsPerUnit() == 9
	}, "the good file takes over")
	hup <- struct{}{}
	waitFor(t, func() bool { return r.svc.Stats.ConfigLoads.Load() >= 3 }, "SIGHUP reloads")
	close(stop)
	wg.Wait()
	assert.Zero(t, failed.Load(), "no call failed during the reloads")
}

// TestMetrics checks the per-descriptor counters envoyproxy/ratelimit keeps.
func TestMetrics(t *testing.T) {
	r := newRig(t, rigOpts{files: map[string]string{"m.yaml": modesYAML}})
	for i := 0; i < 12; i++ {
		r.ask(t, "modes", 0, []string{"per_user", "u"})
	}
	r.ask(t, "modes", 0, []string{"shadow", "a"})
	r.ask(t, "modes", 0, []string{"shadow", "a"})
	var b bytes.Buffer
	r.svc.Stats.WriteMetrics(&b)
	out := b.String()
	for _, want := range []string{
		`rlstore_gateway_rate_limit_total_hits_total{domain="modes",descriptor="per_user"} 12`,
		`rlstore_gateway_rate_limit_over_limit_total{domain="modes",descriptor="per_user"} 2`,
		`rlstore_gateway_rate_limit_near_limit_total{domain="modes",descriptor="per_user"} 2`, // hits 9 and 10 of 10 (ratio 0.8: past 8)
		`rlstore_gateway_rate_limit_within_limit_total{domain="modes",descriptor="per_user"} 10`,
		`rlstore_gateway_rate_limit_shadow_mode_total{domain="modes",descriptor="shadow"} 1`,
		`rlstore_gateway_config_load_success_total 1`,
	} {
		assert.Contains(t, out, want)
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
