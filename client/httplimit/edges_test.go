package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/stretchr/testify/assert"
)

// TestWindowEdges: "any window span holds at most limit" through a real
// net/http server with a SLIDE rule of 5 per 1 s, 10 s and 60 s. RL.SLIDE
// counts whole seconds, so 5 requests at x.985 and 5 more at (x+1).005 were
// 10 within 20 ms of a 1 s window. The server runs on the real clock: the
// test waits for a real second's edge (at most a second), places the burst in
// its last 15 ms and a request just after it. The 1 s and 10 s windows are
// then polled until they (and a second more) have passed; the 60 s window is
// checked by when its denial says the next request would be admitted (no
// earlier than the burst's first request plus the window). The windows run
// side by side, so the test takes about 12 s.
func TestWindowEdges(t *testing.T) {
	c := newClient(t, startRlstore(t))
	var wg sync.WaitGroup
	for _, window := range []time.Duration{time.Second, 10 * time.Second, time.Minute} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			for try := 1; try <= 3; try++ { // a host too busy for the spans is retried
				if err = checkEdges(c, window, try); !errors.Is(err, errTooSlow) {
					break
				}
			}
			assert.NoError(t, err, "window %v", window)
		}()
	}
	wg.Wait()
}

// errTooSlow marks a run the host was too busy for: its requests did not fit
// in the span the check needs, which says nothing about the limit.
var errTooSlow = errors.New("too slow")

// admittedHit is one admitted request: when it was sent and answered.
type admittedHit struct{ sent, got time.Time }

func checkEdges(c *client.Client, window time.Duration, try int) error {
	const limit = 5
	rule := client.Rule{Algorithm: "SLIDE", Limit: limit, Window: window}
	prefix := fmt.Sprintf("edges:%v:%d:%d:", window, try, time.Now().UnixNano())
	l, err := httplimit.New(httplimit.Config{Client: c, Rule: rule, KeyPrefix: prefix, Timeout: busy,
		Key: func(r *http.Request) (string, error) { return r.URL.Path, nil }})
	if err != nil {
		return err
	}
	srv := httptest.NewServer(l.Handler(ok))
	defer srv.Close()
	get := func() (bool, error) {
		resp, err := http.Get(srv.URL)
		if err != nil {
			return false, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return true, nil
		case http.StatusTooManyRequests:
			return false, nil
		}
		return false, fmt.Errorf("status %d", resp.StatusCode)
	}
	if resp, err := http.Get(srv.URL + "/warm"); err == nil { // dial outside the burst, on another key
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	} else {
		return err
	}

	justBeforeSecond()
	var admitted []admittedHit
	burst := limit
	for i := range burst {
		sent := time.Now()
		yes, err := get()
		if err != nil {
			return err
		}
		if !yes {
			return fmt.Errorf("%v: burst request %d denied", window, i+1)
		}
		admitted = append(admitted, admittedHit{sent, time.Now()})
	}
	first := admitted[0].sent
	time.Sleep(time.Until(first.Truncate(time.Second).Add(time.Second + 5*time.Millisecond)))
	at := time.Now()
	yes, err := get()
	if err != nil {
		return err
	}
	if at.Sub(first) >= window {
		return fmt.Errorf("%w: the burst took %v", errTooSlow, at.Sub(first))
	}
	if yes {
		return fmt.Errorf("%v: a request %v after the burst, just after the second's edge, is admitted: %d in that span",
			window, at.Sub(first), len(admitted)+1)
	}
	if window > 10*time.Second {
		// When would the next request be admitted? Ask with a peek, to the millisecond.
		d, err := c.Slide(context.Background(), prefix+"/", limit, window, client.Peek())
		if err != nil {
			return err
		}
		if admitAt := time.Now().Add(d.Wait); admitAt.Before(first.Add(window - 2*time.Millisecond)) {
			return fmt.Errorf("%v: admitted again %v after the burst's first request, want >= %v", window, admitAt.Sub(first), window)
		}
		return nil
	}
	for time.Now().Before(first.Add(window + 1300*time.Millisecond)) {
		sent := time.Now()
		yes, err := get()
		if err != nil {
			return err
		}
		if yes {
			admitted = append(admitted, admittedHit{sent, time.Now()})
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(admitted) <= burst {
		return fmt.Errorf("%v: never let back in once the window passed", window)
	}
	return spansHold(admitted, limit, window)
}

// spansHold checks that no window-long span held more than limit admitted
// requests: from the first request sent to the last answered, any limit+1 of
// them span at least the window (less 2 ms for the clock's rounding).
func spansHold(admitted []admittedHit, limit int, window time.Duration) error {
	for k := 0; k+limit < len(admitted); k++ {
		if span := admitted[k+limit].got.Sub(admitted[k].sent); span < window-2*time.Millisecond {
			return fmt.Errorf("%v: %d requests admitted within %v", window, limit+1, span)
		}
	}
	return nil
}

// justBeforeSecond waits until the wall clock is within the last 15 ms of a
// second (a sleep that wakes late, past the second, waits for the next one).
func justBeforeSecond() {
	for {
		now := time.Now()
		ms := now.Sub(now.Truncate(time.Second))
		if ms >= 985*time.Millisecond {
			return
		}
		time.Sleep(985*time.Millisecond - ms)
	}
}
