package loadtest

import (
	"fmt"
	"io"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/report"
)

// progress prints one line a second until stop is closed.
func progress(out io.Writer, name string, workers []*worker, start time.Time, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var last int64
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			var req, ok, no, errs int64
			for _, w := range workers {
				req += w.live.requests.Load()
				ok += w.live.allowed.Load()
				no += w.live.denied.Load()
				errs += w.live.errors.Load()
			}
			fmt.Fprintf(out, "rlload: %s %4.0fs %10d req %10s/s allowed %d denied %d errors %d\n",
				name, now.Sub(start).Seconds(), req, report.HumanCount(float64(req-last)), ok, no, errs)
			last = req
		}
	}
}
