package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/rlstoretest"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needTool returns the path of a program the test needs, skipping the test
// without it, or failing it under CI=true, where .ci/run installs it.
func needTool(t *testing.T, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed; .ci/run installs Debian's %s", name, pkg)
		}
		t.Skipf("%s is not installed (apt-get install -y %s)", name, pkg)
	}
	return path
}

func TestAlertRulesValid(t *testing.T) {
	promtool := needTool(t, "promtool", "prometheus")
	out, err := exec.Command(promtool, "check", "rules", "../../deploy/prometheus/alerts.yml").CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), "SUCCESS")
}

// startObserved starts rlstore with metrics, a data dir and a one-node
// cluster, so that every metric family exists, and returns the RESP and
// metrics addresses.
func startObserved(t *testing.T) (addr, metrics string) {
	t.Helper()
	p := startProc(t, nil, "--port", "0", "--metrics-addr", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--cluster-addr", "127.0.0.1:"+testport.Stable(t), "--node-name", "observed", "--maxmemory", "100mb")
	addr = p.Addr(t)
	metrics = p.WaitLog(t, regexp.MustCompile(`metrics endpoint listening.*addr=(\S+)`))[1]
	return addr, metrics
}

// TestDashboardNamesRealMetrics checks deploy/grafana/rlstore.json is JSON
// and that every rlstore metric its queries name is in /metrics.
func TestDashboardNamesRealMetrics(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana/rlstore.json")
	require.NoError(t, err)
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(b, &dash))
	require.NotEmpty(t, dash.Panels)
	addr, metrics := startObserved(t)
	c := newClient(t, addr)
	require.NoError(t, c.Do(t.Context(), "RL.POLICY", "SET", "p", "SLIDE", 1, 10).Err())
	require.NoError(t, c.Do(t.Context(), "RL.CHECK", "p", "k").Err())
	_, body := httpGet(t, "http://"+metrics+"/metrics")
	names := regexp.MustCompile(`rlstore_[a-z_]+`)
	for _, text := range []string{string(b), readFile(t, "../../deploy/prometheus/alerts.yml")} {
		for _, name := range names.FindAllString(text, -1) {
			assert.Regexp(t, `(?m)^`+name+`[{ ]`, body, "%s is named by a dashboard or alert but not in /metrics", name)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// TestRealPrometheusScrapes runs Debian's prometheus against rlstore under
// a bounded load and asks its HTTP API for the rate of decisions.
func TestRealPrometheusScrapes(t *testing.T) {
	prom := needTool(t, "prometheus", "prometheus")
	addr, metrics := startObserved(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf("global:\n  scrape_interval: 200ms\n  evaluation_interval: 1s\nscrape_configs:\n"+
		"  - job_name: rlstore\n    static_configs:\n      - targets: [%q]\n", metrics)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	web := "127.0.0.1:" + testport.Stable(t)
	cmd := exec.Command(prom, "--config.file", filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path", filepath.Join(dir, "data"),
		"--web.listen-address", web)
	var logs rlstoretest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	c := newClient(t, addr)
	stop := make(chan struct{})
	loaded := make(chan struct{})
	go func() { // bounded: until the query succeeds, at most the test's deadline or 400,000 decisions
		defer close(loaded)
		end := time.Now().Add(deadline)
		for i := 0; i < 400000 && time.Now().Before(end); i++ {
			select {
			case <-stop:
				return
			default:
			}
			if c.Do(t.Context(), "RL.SLIDE", "load:"+strconv.Itoa(i%100), 10, 60).Err() != nil {
				time.Sleep(10 * time.Millisecond) // a timeout on a loaded host: the load goes on, or the rate drops to 0
				continue
			}
			if i%100 == 99 {
				time.Sleep(5 * time.Millisecond) // pace the load over several scrapes; nothing is being ordered
			}
		}
	}()
	defer func() { close(stop); <-loaded }()
	query := "http://" + web + "/api/v1/query?query=" + url.QueryEscape(`sum(rate(rlstore_decisions_total{command="rl.slide"}[3s]))`)
	var last string
	ok := assert.Eventually(t, func() bool {
		_, body := tryGet(query)
		last = body
		var r struct {
			Status string
			Data   struct{ Result []struct{ Value [2]any } }
		}
		if json.Unmarshal([]byte(body), &r) != nil || r.Status != "success" || len(r.Data.Result) == 0 {
			return false
		}
		v, err := strconv.ParseFloat(fmt.Sprint(r.Data.Result[0].Value[1]), 64)
		return err == nil && v > 0
	}, deadline, 200*time.Millisecond, "Prometheus never saw a positive rate of decisions")
	if !ok {
		t.Logf("last answer: %s\nprometheus log:\n%s", last, logs.String())
	}
}

// tryGet is an HTTP GET that reports failure in the body, for polling.
func tryGet(u string) (int, string) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
