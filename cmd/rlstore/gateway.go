package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rlstore/rlstore/gateway"
	"github.com/rlstore/rlstore/server"
)

// gatewayFlags are the gRPC gateway's options (docs/gateway.md).
type gatewayFlags struct {
	Port       int    // -1: off
	ConfigDir  string // envoyproxy/ratelimit's YAML files
	Shadow     bool
	Quota      bool
	Headers    bool
	StopOver   bool
	Metadata   bool
	LocalCache int64 // bytes; 0: none
	Lean       bool  // ShouldRateLimit and Health/Check on the lean HTTP/2 loop
}

func (f *gatewayFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&f.Port, "grpc-port", -1, "TCP `port` serving Envoy's rate limit service (envoy.service.ratelimit.v3) over gRPC, with grpc.health.v1 and reflection, on --bind; TLS with --tls-cert-file when that is set; 0 picks a free port and logs it; -1: off")
	fs.StringVar(&f.ConfigDir, "rls-config", "", "`folder` of envoyproxy/ratelimit YAML files (*.yaml, *.yml) for --grpc-port; reloaded on SIGHUP and when a file changes (a bad file keeps the configuration in force)")
	fs.Var(newYesNo(&f.Shadow, false), "rls-shadow-mode", "`yes|no`: with yes every OVER_LIMIT answer of --grpc-port becomes OK (envoyproxy/ratelimit's SHADOW_MODE); metrics still count")
	fs.Var(newYesNo(&f.Quota, false), "rls-quota-mode", "`yes|no`: with yes every descriptor is in quota mode (envoyproxy/ratelimit's global quota mode): a request is OVER_LIMIT only when all of them are")
	fs.Var(newYesNo(&f.Headers, false), "rls-response-headers", "`yes|no`: with yes --grpc-port's answers add RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset (envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED)")
	fs.Var(newYesNo(&f.Metadata, false), "rls-response-dynamic-metadata", "`yes|no`: with yes --grpc-port's answers carry the request and the passing limits' metadata as dynamic metadata (envoyproxy/ratelimit's RESPONSE_DYNAMIC_METADATA)")
	fs.Var(newSize(&f.LocalCache, 0), "rls-local-cache-size", "`size` (64mb) of --grpc-port's local over-limit cache: a counting-window descriptor known over its limit is answered OVER_LIMIT without asking the store until its window ends (envoyproxy/ratelimit's LOCAL_CACHE_SIZE_IN_BYTES); 0: none")
	fs.Var(newYesNo(&f.Lean, true), "grpc-lean", "`yes|no`: with yes a --grpc-port connection whose first call is ShouldRateLimit or Health/Check is served by rlstore's own HTTP/2 loop (a later call of another method on it gets UNIMPLEMENTED); every other connection, and all of them with no, by grpc-go")
	fs.Var(newYesNo(&f.StopOver, false), "rls-stop-increment-when-overlimit", "`yes|no`: with yes a call that would take a descriptor over its limit counts its hits only on such descriptors (envoyproxy/ratelimit's STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT; a round trip more per call)")
}

func (f gatewayFlags) validate() error {
	switch {
	case f.Port < -1 || f.Port > 65535:
		return errors.New("--grpc-port " + strconv.Itoa(f.Port) + " is out of range -1-65535")
	case f.ConfigDir != "" && f.Port == -1:
		return errors.New("--rls-config needs --grpc-port")
	}
	return nil
}

// gatewayRun is a started gateway; stop ends it.
type gatewayRun struct {
	srv     *gateway.Server
	svc     *gateway.Service
	decider *server.Gateway
	cancel  context.CancelFunc
	stopHup func()
	once    sync.Once
}

// startGateway serves --grpc-port. cs are --tls-port's certificates, or nil.
func startGateway(c config, srv *server.Server, cs *certs, log *slog.Logger) (*gatewayRun, error) {
	f := c.Gateway
	d := srv.Gateway(4 * runtime.GOMAXPROCS(0))
	svc := gateway.NewService(d, gateway.Options{GlobalShadowMode: f.Shadow, GlobalQuotaMode: f.Quota, ResponseHeaders: f.Headers,
		StopIncrementWhenOverLimit: f.StopOver, ResponseDynamicMetadata: f.Metadata, LocalCacheBytes: int(f.LocalCache)})
	g := &gatewayRun{svc: svc, decider: d, stopHup: func() {}}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	if err := g.loadConfig(ctx, f.ConfigDir, log); err != nil {
		g.stop(context.Background())
		return nil, err
	}
	tc, err := gatewayTLS(ctx, c, cs, log)
	if err != nil {
		g.stop(context.Background())
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(c.Bind, strconv.Itoa(f.Port)))
	if err != nil {
		g.stop(context.Background())
		return nil, fmt.Errorf("--grpc-port %d: %w", f.Port, err)
	}
	warnOpenGateway(c, tc != nil, log)
	g.srv = gateway.NewServer(gateway.ServerConfig{Service: svc, TLS: tc, Ready: srv.Ready, Logger: log, GRPCGoOnly: !f.Lean})
	go func() { _ = g.srv.Serve(ln) }()
	// Tests and scripts read the address from this line: keep it stable.
	log.Info("gRPC rate limit service listening", "addr", ln.Addr().String(), "tls", tc != nil, "rls_config", f.ConfigDir)
	return g, nil
}

// warnOpenGateway warns when the gRPC port is reachable from other hosts
// without mutual TLS: Envoy's protocol has no password, so whoever reaches
// it can spend (or probe) any quota. --requirepass does not guard it.
func warnOpenGateway(c config, tlsOn bool, log *slog.Logger) {
	ip, err := c.bindAddr()
	if err != nil || ip.IsLoopback() || (tlsOn && c.TLSAuthClients == "yes") {
		return
	}
	log.Warn("--grpc-port is reachable from other hosts without mutual TLS; Envoy's rate limit protocol has no password, "+
		"so any client that reaches it can spend any quota: set --tls-cert-file, --tls-ca-cert-file and --tls-auth-clients yes, "+
		"or keep the port on a network only the gateways reach", "bind", c.Bind)
}

// loadConfig loads --rls-config and watches it; a bad file at start is an error.
func (g *gatewayRun) loadConfig(ctx context.Context, dir string, log *slog.Logger) error {
	if dir == "" {
		log.Warn("--grpc-port without --rls-config: every ShouldRateLimit call fails with 'no rate limit configuration loaded'")
		return nil
	}
	if err := g.svc.Load(dir); err != nil {
		return fmt.Errorf("--rls-config: %w", err)
	}
	log.Info("rate limit configuration loaded", "dir", dir, "domains", g.svc.Config().Domains())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP)
	hup := make(chan struct{}, 1)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-sig:
				select {
				case hup <- struct{}{}:
				default:
				}
			}
		}
	}()
	g.stopHup = func() { signal.Stop(sig) }
	return g.svc.Watch(ctx, dir, hup, log)
}

// gatewayTLS is the gRPC port's TLS configuration: --tls-port's
// certificates, or, without --tls-port, the same files loaded (and
// reloaded) for gRPC alone; nil without --tls-cert-file.
func gatewayTLS(ctx context.Context, c config, cs *certs, log *slog.Logger) (*tls.Config, error) {
	if c.TLSCertFile == "" {
		return nil, nil
	}
	if cs == nil {
		var err error
		if cs, err = newCerts(c, log); err != nil {
			return nil, err
		}
		stop := make(chan struct{})
		go func() { <-ctx.Done(); close(stop) }()
		go cs.watch(stop)
	}
	return cs.config(), nil
}

// stop ends the calls under way (within ctx), then the watcher and the
// gateway's connections to the server.
// It may be called more than once.
func (g *gatewayRun) stop(ctx context.Context) {
	g.once.Do(func() {
		if g.srv != nil {
			g.srv.GracefulStop(ctx)
		}
		g.stopHup()
		g.cancel()
		_ = g.decider.Close()
	})
}

// gatewayStopper stops the gateway before the server it decides through:
// its calls under way finish while the server still answers them, and
// Envoy, told to go away, reconnects to another node.
type gatewayStopper struct {
	stopper
	gw *gatewayRun
}

func (s gatewayStopper) Shutdown(ctx context.Context) error {
	gctx, cancel := context.WithTimeout(ctx, gatewayStopTimeout)
	defer cancel()
	s.gw.stop(gctx)
	return s.stopper.Shutdown(ctx)
}

func (s gatewayStopper) Close() error {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s.gw.stop(ctx)
	return s.stopper.Close()
}

// gatewayStopTimeout bounds the wait for gRPC calls under way at shutdown.
const gatewayStopTimeout = 5 * time.Second

// metrics writes the gateway's metrics; nil without a gateway.
func (g *gatewayRun) metrics() func(w io.Writer) {
	if g == nil {
		return nil
	}
	return g.svc.Stats.WriteMetrics
}
