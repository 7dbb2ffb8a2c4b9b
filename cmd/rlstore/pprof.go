package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"
)

// startPprof serves Go's profiles (/debug/pprof/) on addr, so that a running
// server can be profiled without perf: go tool pprof http://addr/debug/pprof/profile.
// The function it returns stops the listener. Profiles show command names and
// stack traces, so addr should be loopback; a non-loopback one is logged loudly.
func startPprof(addr string, log *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	addPprof(mux)
	return startHTTP("pprof", "--pprof-addr", addr, mux, log)
}

// addPprof adds Go's profiles under /debug/pprof/ to mux.
func addPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// startHTTP serves mux on addr until the function it returns is called.
// what names the endpoint in logs ("<what> endpoint listening", with its
// address: tests read it from there), flag in errors.
func startHTTP(what, flag, addr string, mux *http.ServeMux, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	if ap, ok := ln.Addr().(*net.TCPAddr); ok && !ap.IP.IsLoopback() {
		log.Warn(what+" endpoint is reachable from other hosts; it is unauthenticated", "addr", ln.Addr().String())
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error(what+" endpoint stopped", "err", err)
		}
	}()
	log.Info(what+" endpoint listening", "addr", ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}, nil
}
