package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

const gatewayYAML = `domain: api
descriptors:
  - key: remote_address
    rate_limit: {unit: hour, requests_per_unit: 3}
`

// grpcLine matches the line that announces --grpc-port's address.
var grpcLine = regexp.MustCompile(`msg="gRPC rate limit service listening" addr=(\S+)`)

// metricsLine matches the line that announces --metrics-addr's address.
var metricsLine = regexp.MustCompile(`msg="metrics endpoint listening" addr=(\S+)`)

// TestProcessGateway runs rlstore with --grpc-port 0 and --rls-config:
// ShouldRateLimit decides through the store (the key shows over RESP, the
// gateway's client in CLIENT LIST), health is SERVING, /metrics has the
// descriptor's counters, a bad file on SIGHUP keeps the configuration and
// is logged, and SIGTERM stops it cleanly.
func TestProcessGateway(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "api.yaml")
	require.NoError(t, os.WriteFile(file, []byte(gatewayYAML), 0o644))
	p := startProc(t, nil, "--port", "0", "--grpc-port", "0", "--rls-config", dir, "--metrics-addr", "127.0.0.1:0")
	addr := p.Addr(t)
	gaddr := p.WaitLog(t, grpcLine)[1]
	maddr := p.WaitLog(t, metricsLine)[1]
	conn, err := grpc.NewClient(gaddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	hr, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	assert.Equal(t, healthpb.HealthCheckResponse_SERVING, hr.Status)

	rls := pb.NewRateLimitServiceClient(conn)
	req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{
		{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.1.2.3"}}}}}
	var codes []string
	for i := 0; i < 4; i++ {
		resp, err := rls.ShouldRateLimit(ctx, req)
		require.NoError(t, err)
		codes = append(codes, resp.OverallCode.String())
	}
	assert.Equal(t, []string{"OK", "OK", "OK", "OVER_LIMIT"}, codes)

	c := newClient(t, addr)
	keys, err := c.Keys(ctx, "rls:*").Result()
	require.NoError(t, err)
	assert.Equal(t, []string{"rls:api:remote_address=10.1.2.3|c3600"}, keys)
	list, err := c.ClientList(ctx).Result()
	require.NoError(t, err)
	assert.Contains(t, list, "name=gateway")

	metrics := metricsText(t, "http://"+maddr+"/metrics")
	assert.Contains(t, metrics, `rlstore_gateway_rate_limit_total_hits_total{domain="api",descriptor="remote_address"} 4`)
	assert.Contains(t, metrics, `rlstore_gateway_rate_limit_over_limit_total{domain="api",descriptor="remote_address"} 1`)

	require.NoError(t, os.WriteFile(file, []byte("domain: api\ndescriptors:\n  - key: a\n    rate_limt: {}\n"), 0o644))
	p.Signal(t, syscall.SIGHUP)
	p.WaitLog(t, regexp.MustCompile(`rate limit configuration not reloaded; keeping the one in force" reason=SIGHUP err=".*api.yaml:4: config error, unknown key 'rate_limt'`))
	resp, err := rls.ShouldRateLimit(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, "OVER_LIMIT", resp.OverallCode.String(), "the configuration in force is kept")
	require.Eventually(t, func() bool {
		return loadErrors.MatchString(metricsText(t, "http://"+maddr+"/metrics"))
	}, deadline, 10*time.Millisecond, "the failed reloads (file change and SIGHUP) are counted")

	p.Signal(t, syscall.SIGTERM)
	assert.Equal(t, 0, p.ExitCode(t))
	assert.Contains(t, p.Log.String(), `msg="shutdown complete"`)
}

// loadErrors matches the failed-load counter once the file change and the
// SIGHUP have both been counted (a slow write can make the change two).
var loadErrors = regexp.MustCompile(`(?m)^rlstore_gateway_config_load_error_total ([2-9]|\d\d+)$`)

func metricsText(t *testing.T, url string) string {
	t.Helper()
	_, body := httpGet(t, url)
	return body
}

// TestProcessGatewayTLS checks --grpc-port with the --tls-* files: mutual
// TLS beside --tls-port, where a client without a certificate is refused,
// and TLS without --tls-port.
func TestProcessGatewayTLS(t *testing.T) {
	ca := newTestCA(t)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	c, k := ca.issue(t, 9, true)
	clientCert, err := tls.X509KeyPair(c, k)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		auth string
	}{
		{"mutual TLS beside --tls-port", []string{"--tls-port", testport.Stable(t)}, "yes"},
		{"TLS without --tls-port", nil, "no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(gatewayYAML), 0o644))
			certFile, keyFile, caFile := tlsFiles(t, dir, ca, 2)
			args := append([]string{"--port", "0", "--grpc-port", "0", "--rls-config", dir, "--tls-cert-file", certFile,
				"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", tc.auth}, tc.args...)
			p := startProc(t, nil, args...)
			gaddr := p.WaitLog(t, regexp.MustCompile(`msg="gRPC rate limit service listening" addr=(\S+) tls=true`))[1]
			call := func(cert *tls.Certificate) error {
				cfg := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
				if cert != nil {
					cfg.Certificates = []tls.Certificate{*cert}
				}
				conn, err := grpc.NewClient(gaddr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
				require.NoError(t, err)
				defer conn.Close()
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				_, err = pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api",
					Descriptors: []*pbstruct.RateLimitDescriptor{{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "a"}}}}})
				return err
			}
			assert.NoError(t, call(&clientCert))
			if tc.auth == "yes" {
				assert.Error(t, call(nil), "no client certificate")
			} else {
				assert.NoError(t, call(nil))
			}
		})
	}
}

// TestProcessGatewayStopIncrement: with --rls-stop-increment-when-overlimit
// yes, calls over the /login limit leave the address's quota alone.
func TestProcessGatewayStopIncrement(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(gatewayYAML+`  - key: path
    value: /login
    rate_limit: {unit: hour, requests_per_unit: 1}
`), 0o644))
	p := startProc(t, nil, "--port", "0", "--grpc-port", "0", "--rls-config", dir, "--rls-stop-increment-when-overlimit", "yes")
	conn, err := grpc.NewClient(p.WaitLog(t, grpcLine)[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	addr := &pbstruct.RateLimitDescriptor{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.1.2.3"}}}
	login := &pbstruct.RateLimitDescriptor{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "path", Value: "/login"}}}
	rls := pb.NewRateLimitServiceClient(conn)
	var codes []string
	for range 3 {
		resp, err := rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{addr, login}})
		require.NoError(t, err)
		codes = append(codes, resp.OverallCode.String())
	}
	assert.Equal(t, []string{"OK", "OVER_LIMIT", "OVER_LIMIT"}, codes)
	resp, err := rls.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{addr}})
	require.NoError(t, err)
	assert.Equal(t, uint32(1), resp.Statuses[0].LimitRemaining, "only the first call counted on the address (limit 3)")
}

// TestProcessGatewayCacheMetadata: --rls-local-cache-size answers the
// calls after the first over the limit from the cache (counted in
// /metrics), and --rls-response-dynamic-metadata yes sends the request
// back as dynamic metadata.
func TestProcessGatewayCacheMetadata(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(gatewayYAML), 0o644))
	p := startProc(t, nil, "--port", "0", "--grpc-port", "0", "--rls-config", dir, "--metrics-addr", "127.0.0.1:0",
		"--rls-local-cache-size", "1mb", "--rls-response-dynamic-metadata", "yes")
	conn, err := grpc.NewClient(p.WaitLog(t, grpcLine)[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	maddr := p.WaitLog(t, metricsLine)[1]
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	req := &pb.RateLimitRequest{Domain: "api", Descriptors: []*pbstruct.RateLimitDescriptor{
		{Entries: []*pbstruct.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.1.2.3"}}}}}
	rls := pb.NewRateLimitServiceClient(conn)
	var codes []string
	for range 6 {
		resp, err := rls.ShouldRateLimit(ctx, req)
		require.NoError(t, err)
		codes = append(codes, resp.OverallCode.String())
		assert.Equal(t, "api", resp.GetDynamicMetadata().GetFields()["domain"].GetStringValue())
	}
	assert.Equal(t, []string{"OK", "OK", "OK", "OVER_LIMIT", "OVER_LIMIT", "OVER_LIMIT"}, codes)
	metrics := metricsText(t, "http://"+maddr+"/metrics")
	assert.Contains(t, metrics, `rlstore_gateway_rate_limit_over_limit_with_local_cache_total{domain="api",descriptor="remote_address"} 2`)
}
