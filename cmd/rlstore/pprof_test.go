package main

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPprofServesProfiles starts the endpoint on a free loopback port and
// fetches the goroutine profile, as go tool pprof would.
func TestPprofServesProfiles(t *testing.T) {
	var logs bytes.Buffer
	stop, err := startPprof("127.0.0.1:0", slog.New(slog.NewTextHandler(&logs, nil)))
	require.NoError(t, err)
	defer stop()
	m := regexp.MustCompile(`addr=(\S+)`).FindStringSubmatch(logs.String())
	require.NotNil(t, m, "the start is logged with the address: %s", logs.String())
	resp, err := http.Get("http://" + m[1] + "/debug/pprof/goroutine?debug=1")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "goroutine profile:")
}

func TestPprofBadAddress(t *testing.T) {
	_, err := startPprof("127.0.0.1:99999", slog.New(slog.NewTextHandler(io.Discard, nil)))
	assert.ErrorContains(t, err, "--pprof-addr")
}
