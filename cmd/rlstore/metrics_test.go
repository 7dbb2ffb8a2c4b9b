package main

import (
	"io"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body)
}

// TestProcessMetricsEndpoint starts the binary with --metrics-addr on a free
// port and reads every endpoint it serves.
func TestProcessMetricsEndpoint(t *testing.T) {
	p := startProc(t, nil, "--port", "0", "--metrics-addr", "127.0.0.1:0")
	addr := p.Addr(t)
	m := p.WaitLog(t, regexp.MustCompile(`metrics endpoint listening.*addr=(\S+)`))
	base := "http://" + m[1]
	c := newClient(t, addr)
	require.NoError(t, c.Do(t.Context(), "RL.SLIDE", "k", 1, 10).Err())
	require.NoError(t, c.Do(t.Context(), "RL.SLIDE", "k", 1, 10).Err())

	code, body := httpGet(t, base+"/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `rlstore_decisions_total{command="rl.slide",result="denied"} 1`)
	assert.Contains(t, body, `rlstore_connections 1`)
	code, body = httpGet(t, base+"/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = httpGet(t, base+"/readyz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = httpGet(t, base+"/debug/pprof/goroutine?debug=1")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "goroutine profile:")
}
