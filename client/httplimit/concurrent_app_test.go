package httplimit_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rlstore/rlstore/client"
	"github.com/rlstore/rlstore/client/httplimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentRequestsExact: a real net/http server behind the middleware,
// 40 requests of one client sent at once, admits exactly the limit with
// every algorithm: each decision is one atomic command, so no two requests
// can both take the last unit.
func TestConcurrentRequestsExact(t *testing.T) {
	c := newClient(t, startRlstore(t))
	rules := map[string]client.Rule{
		"SLIDE": {Algorithm: "SLIDE", Limit: 10, Window: time.Minute},
		"FIXED": {Algorithm: "FIXED", Limit: 10, Window: time.Hour},
		"LOG":   {Algorithm: "LOG", Limit: 10, Window: time.Minute},
		"TOKEN": {Algorithm: "TOKEN", Limit: 10, Rate: 1, Window: time.Hour},
	}
	for name, rule := range rules {
		t.Run(name, func(t *testing.T) {
			l, err := httplimit.New(httplimit.Config{Client: c, Name: "conc-" + name, Rule: rule, Timeout: busy})
			require.NoError(t, err)
			srv := httptest.NewServer(l.Handler(ok))
			defer srv.Close()
			const n = 40
			codes := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					resp, err := http.Get(srv.URL)
					if err != nil {
						codes[i] = -1
						return
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
					codes[i] = resp.StatusCode
				}()
			}
			wg.Wait()
			count := map[int]int{}
			for _, code := range codes {
				count[code]++
			}
			assert.Equal(t, map[int]int{http.StatusOK: 10, http.StatusTooManyRequests: n - 10}, count)
			st := l.Stats()
			assert.Equal(t, uint64(10), st.Allowed)
			assert.Equal(t, uint64(n-10), st.Denied)
		})
	}
}
