package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// run starts rlstore with the command-line args and returns the exit code:
// 0 after a clean shutdown, 1 on any failure, 2 for bad flags. Help goes to
// stdout; logs and errors go to stderr. `rlstore health ...` runs health instead.
func run(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	return runTuned(args, lookupEnv, stdout, stderr, sigs, nil)
}

// runTuned is run with the garbage collector's budget, which a start with
// --grpc-port raises (see gatewayGCHeadroom); gc may be nil.
func runTuned(args []string, lookupEnv func(string) (string, bool), stdout, stderr io.Writer, sigs <-chan os.Signal, gc *gcBudget) int {
	if len(args) > 0 && args[0] == "health" {
		return health(args[1:], lookupEnv, stdout, stderr)
	}
	cfg, err := loadConfig(args, lookupEnv, stdout)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "rlstore: %v\n", err)
		return 2
	}
	if cfg.Gateway.Port >= 0 {
		gc.forGateway()
	}
	log := newLogger(cfg, stderr)
	defer setMemoryLimit(cfg.MaxMemory, lookupEnv)()
	if err := serve(cfg, log, sigs); err != nil {
		log.Error("exiting", "err", err)
		return 1
	}
	return 0
}

func newLogger(cfg config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by Load
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// serve runs the server until it stops by itself (SHUTDOWN) or a signal
// stops it, then closes the data dir, so that a clean stop loses nothing.
func serve(cfg config, log *slog.Logger, sigs <-chan os.Signal) (err error) {
	store, err := shard.New(cfg.shardConfig())
	if err != nil {
		return err
	}
	logStart(cfg, log)
	ctx, stopThreads := context.WithCancel(context.Background())
	defer stopThreads()
	startThreads(ctx, cfg.ServerThreads, os.LookupEnv, log)
	if cfg.PprofAddr != "" {
		stop, err := startPprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	pols, err := openPolicies(cfg, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closePolicies(pols)) }()
	dur, err := openDurability(cfg, store, pols, log)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, closeDurability(dur, log)) }()
	scfg := cfg.serverConfig(store, durability(dur), log)
	scfg.Policies = pols
	var tlsLn net.Listener
	var cs *certs
	if cfg.TLSPort != 0 { // first, so that the cluster can advertise the TLS port
		var stopCerts func()
		if tlsLn, cs, stopCerts, err = listenTLS(cfg, log); err != nil {
			return err
		}
		defer stopCerts()
	}
	var cset *clusterSetup
	if cfg.Cluster.on() {
		if cset, err = prepareCluster(cfg, log, tlsLn, cs); err != nil {
			closeListener(tlsLn)
			return err
		}
		scfg.Listener, scfg.Cluster = cset.ln, cset.node.Server.Cluster
		if scfg.Cluster.Replicas, err = replicaConfig(cfg, store, dur); err != nil {
			closeListener(tlsLn)
			cset.abandon()
			return err
		}
	}
	if tlsLn != nil {
		if err := withTLS(cfg, &scfg, tlsLn); err != nil {
			closeListener(tlsLn)
			if cset != nil {
				cset.abandon()
			}
			return err
		}
	}
	var closeRegions func()
	if scfg.Region, closeRegions, err = regionConfig(cfg, log, cs); err != nil { // regions.go
		closeListener(tlsLn)
		if cset != nil {
			cset.abandon()
		}
		return err
	}
	defer closeRegions()
	srv, stop, err := newServer(scfg, cset)
	if err != nil {
		return err
	}
	if node, ok := stop.(clusterStopper); ok {
		defer node.close() // after a SHUTDOWN command too: leave gossip rather than look dead
	}
	var gw *gatewayRun
	if cfg.Gateway.Port != -1 {
		if gw, err = startGateway(cfg, srv, cs, log); err != nil {
			return err
		}
		defer func() { // after a SHUTDOWN command; after a signal, stop has stopped it first
			ctx, cancel := context.WithTimeout(context.Background(), gatewayStopTimeout)
			defer cancel()
			gw.stop(ctx)
		}()
		stop = gatewayStopper{stopper: stop, gw: gw}
	}
	if cfg.MetricsAddr != "" {
		stopMetrics, err := startMetrics(cfg.MetricsAddr, srv, gw.metrics(), log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	ready := make(chan net.Addr, 1)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ready) }()
	select {
	case addr := <-ready:
		// Tests and scripts read the address from this line: keep it stable.
		log.Info("ready to accept connections", "addr", addr.String())
		if err := sdNotify(os.LookupEnv, "READY=1\nSTATUS=ready to accept connections on "+addr.String()); err != nil {
			log.Warn("could not tell systemd the server is ready ($NOTIFY_SOCKET)", "err", err)
		}
	case err := <-done:
		return fmt.Errorf("listen on %s: %w", cfg.addr(), err)
	}
	return waitForStop(stop, done, sigs, cfg.ShutdownTimeout, log)
}

// newServer builds the server for scfg: alone, or as a cluster node when
// cset is set. stop is what stops it gracefully.
func newServer(scfg server.Config, cset *clusterSetup) (*server.Server, stopper, error) {
	if cset == nil {
		srv, err := server.New(scfg)
		return srv, srv, err
	}
	n, err := cset.start(scfg)
	if err != nil {
		return nil, nil, err
	}
	return n.Server, clusterStopper{srv: n.Server, cs: cset, n: n}, nil
}

func closeListener(ln net.Listener) {
	if ln != nil {
		_ = ln.Close()
	}
}

func logStart(cfg config, log *slog.Logger) {
	if cfg.passOnCmdline {
		log.Warn("--requirepass on the command line can be read by any local user in the process list; " +
			"use --requirepass-file, the RLSTORE_REQUIREPASS environment variable or the config file instead")
	}
	log.Info("starting rlstore", "bind", cfg.Bind, "port", cfg.Port,
		"auth", cfg.RequirePass != "", "protected_mode", cfg.ProtectedMode,
		"maxclients", cfg.MaxClients, "maxmemory", cfg.MaxMemory, "max_keys", cfg.MaxKeys,
		"max_request_bytes", cfg.MaxRequestBytes, "shards", cfg.Shards, "hz", cfg.Hz, "config", cfg.ConfigFile,
		"data_dir", cfg.DataDir, "appendfsync", cfg.AppendFsync)
}

// stopper is the part of *server.Server that waitForStop drives.
type stopper interface {
	Shutdown(ctx context.Context) error
	Close() error
}

// waitForStop waits for the server to stop by itself (done) or for a signal.
// On the first signal it drains clients for at most timeout, then closes the
// rest; a SIGINT during the drain returns at once without waiting for it. A
// SIGTERM during the drain is ignored, as Redis ignores it while it shuts
// down: GNU timeout, and supervisors like it, send SIGTERM to the process
// and again to its process group, which must not cut a cluster node's leave short.
func waitForStop(srv stopper, done <-chan error, sigs <-chan os.Signal, timeout time.Duration, log *slog.Logger) error {
	select {
	case err := <-done:
		log.Info("server stopped")
		return err
	case sig := <-sigs:
		log.Info("signal received: draining clients; SIGINT to exit at once", "signal", sig.String(), "timeout", timeout)
		_ = sdNotify(os.LookupEnv, "STOPPING=1\nSTATUS=draining clients")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- srv.Shutdown(ctx) }()
	sig, err := awaitUnlessForced(drained, sigs, log)
	if sig != nil {
		return fmt.Errorf("second signal (%s): exiting without finishing the drain", sig)
	}
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: %w", err)
	}
	if sig, err = awaitUnlessForced(done, sigs, log); sig != nil {
		return fmt.Errorf("second signal (%s): exiting without finishing the drain", sig)
	}
	if err != nil {
		log.Debug("serve returned after shutdown", "err", err)
	}
	log.Info("shutdown complete")
	return nil
}

// awaitUnlessForced returns what ch yields, or the signal that forced the
// exit first. Only SIGTERM does not force it.
func awaitUnlessForced(ch <-chan error, sigs <-chan os.Signal, log *slog.Logger) (os.Signal, error) {
	for {
		select {
		case err := <-ch:
			return nil, err
		case sig := <-sigs:
			if sig != syscall.SIGTERM {
				return sig, nil
			}
			log.Info("signal received while shutting down: ignored; SIGINT exits at once", "signal", sig.String())
		}
	}
}
