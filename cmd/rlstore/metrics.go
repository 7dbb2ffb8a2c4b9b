package main

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"

	"github.com/rlstore/rlstore/server"
)

// startMetrics serves, on addr: Prometheus's /metrics; /healthz, which
// answers 200 while the process runs; /readyz, which answers 200 only while
// the server is loaded, accepting clients and (in a cluster) a member, and
// 503 with the reason otherwise; and Go's profiles under /debug/pprof/.
// more, if not nil, writes more metrics after the server's (the gateway's).
func startMetrics(addr string, srv *server.Server, more func(io.Writer), log *slog.Logger) (stop func(), err error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		bw := bufio.NewWriterSize(w, 64<<10)
		srv.WriteMetrics(bw)
		if more != nil {
			more(bw)
		}
		_ = bw.Flush()
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		if err := srv.Ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	addPprof(mux)
	return startHTTP("metrics", "--metrics-addr", addr, mux, log)
}
