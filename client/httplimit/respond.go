package httplimit

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/client"
)

// fail serves a request rlstore gave no decision for: a configuration error
// answers 500; an outage is served open or closed, and its first failure is
// logged.
func (l *Limiter) fail(w http.ResponseWriter, r *http.Request, next http.Handler, err error) {
	if client.IsConfigError(err) {
		l.misconf.Add(1)
		if l.confLog.due(err.Error(), time.Now()) {
			l.cfg.Logger.Error("httplimit: rlstore refused this limiter's configuration; answering 500, never failing open", "err", err, "key_prefix", l.cfg.KeyPrefix)
		}
		if l.cfg.OnError != nil {
			l.cfg.OnError(w, r, err)
			return
		}
		l.reject(w, http.StatusInternalServerError, "rate limiter misconfigured", 0)
		return
	}
	if !l.failing.Swap(true) {
		l.cfg.Logger.Warn("httplimit: rlstore gave no decision; failing "+l.mode(), "err", err)
	}
	if l.cfg.FailOpen {
		l.open.Add(1)
		next.ServeHTTP(w, r)
		return
	}
	l.closed.Add(1)
	if l.cfg.OnError != nil {
		l.cfg.OnError(w, r, err)
		return
	}
	w.Header().Set("Retry-After", strconv.FormatInt(int64(unavailableRetry/time.Second), 10))
	l.reject(w, http.StatusServiceUnavailable, "rate limiter unavailable", unavailableRetry)
}

// unavailableRetry is the Retry-After of a fail-closed 503: soon, since an
// outage of rlstore is usually short and a client should not give up.
const unavailableRetry = time.Second

func (l *Limiter) recovered() {
	if l.failing.Load() && l.failing.Swap(false) {
		l.cfg.Logger.Info("httplimit: rlstore is answering again")
	}
}

func (l *Limiter) mode() string {
	if l.cfg.FailOpen {
		return "open"
	}
	return "closed"
}

// reject writes the small error body; wait (if > 0) is given in whole seconds.
func (l *Limiter) reject(w http.ResponseWriter, status int, msg string, wait time.Duration) {
	secs := int64(0)
	if wait > 0 {
		secs = int64((wait + time.Second - 1) / time.Second)
	}
	if l.cfg.JSON {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		body := `{"error":"` + msg + `"`
		if secs > 0 {
			body += `,"retry_after":` + strconv.FormatInt(secs, 10)
		}
		_, _ = io.WriteString(w, body+"}\n")
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if secs > 0 {
		msg += "; retry after " + strconv.FormatInt(secs, 10) + " s"
	}
	_, _ = io.WriteString(w, msg+"\n")
}

// sleep waits d unless ctx ends first, and reports whether it waited it all.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
