package integrations

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/rlstoretest"
)

// runLimit bounds each language's suite; together they take seconds.
const runLimit = 3 * time.Minute

// missing skips the test, or fails it when CI=true: on the CI machine every
// runtime is installed by .ci/run, so a skip would hide a broken set-up.
func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: not skipping)", why)
	}
	t.Skip(why)
}

// runEnv is run with env added to the command's environment.
func runEnv(t *testing.T, env []string, dir, name string, args ...string) {
	t.Helper()
	addr := startRlstore(t)
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "RLSTORE_ADDR="+addr), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), tail(string(out), 12))
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// TestNode runs integrations/node's `node --test` (express-rate-limit and
// rate-limiter-flexible with ioredis and node-redis).
func TestNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not installed")
	}
	dir := "node" // go test runs in the package folder
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "express-rate-limit")); err != nil {
		missing(t, "integrations/node has no node_modules: run npm ci there")
	}
	// test/auth.test.js needs an rlstore with a password.
	auth := rlstoretest.Start(t, rlstoreBin, nil, "--port", "0", "--requirepass", "sekret").Addr(t)
	runEnv(t, []string{"RLSTORE_AUTH_ADDR=" + auth}, dir, node, "--test", "test/")
}

// TestNodeFlexibleSuite runs rate-limiter-flexible's own RateLimiterRedis
// tests (from $RLSTORE_SUITES, see upstreamSuites) with RateLimiterRlstore
// substituted, once with its default sliding window and once with
// algorithm 'fixed' (RateLimiterRedis's own window); every test passes
// except those node/suites/flexible-expected.js lists with why.
func TestNodeFlexibleSuite(t *testing.T) {
	for _, algorithm := range []string{"slide", "fixed"} {
		t.Run(algorithm, func(t *testing.T) { nodeSuite(t, "flexible-"+algorithm, "mocha", "suites/flexible.js", algorithm) })
	}
}

// TestNodeExpressSuite runs express-rate-limit's external-store test (from
// $RLSTORE_SUITES, see upstreamSuites) with RlstoreStore.
func TestNodeExpressSuite(t *testing.T) { nodeSuite(t, "express", "express", "suites/express.js") }

// nodeSuite runs script with node in integrations/node against a fresh
// rlstore through a tap (suiteRun), after checking that npm ci installed
// module there.
func nodeSuite(t *testing.T, tape, module, script string, args ...string) {
	upstreamSuites(t)
	node, err := exec.LookPath("node")
	if err != nil {
		missing(t, "node is not installed")
	}
	if _, err := os.Stat(filepath.Join("node", "node_modules", module)); err != nil {
		missing(t, "integrations/node has no node_modules/"+module+": run npm ci there")
	}
	suiteRun(t, tape, []string{"main"}, "node", node, append([]string{script}, args...)...)
}

// upstreamSuites skips a test of a library's own suite unless
// RLSTORE_SUITES names the folder node/suites/suites.sh fills: their code
// is theirs, so this repository does not keep it, and CI cannot fetch it.
// The outcomes they gave (docs/integrations.md) are recorded in the
// harnesses' lists of expected failures, and the traffic on tapes that
// TestReplay replays in CI (suiteRun).
func upstreamSuites(t *testing.T) {
	t.Helper()
	if os.Getenv("RLSTORE_SUITES") == "" {
		t.Skip("RLSTORE_SUITES is not set: the libraries' own test suites are not part of this repository; integrations/node/suites/suites.sh fetches them (TestReplay replays their recorded traffic)")
	}
}

// python is Debian's interpreter, which sees Debian's python3-limits; a
// pyenv python3 earlier on PATH would not.
const python = "/usr/bin/python3"

// TestPython runs integrations/python's unittest suite (limits 2.8 and
// Flask-Limiter, from Debian's python3-limits and python3-flask-limiter).
func TestPython(t *testing.T) {
	if _, err := os.Stat(python); err != nil {
		missing(t, python+" is not installed")
	}
	probe := exec.Command(python, "-c", "import limits, flask_limiter, redis")
	if out, err := probe.CombinedOutput(); err != nil {
		missing(t, "python3-limits, python3-flask-limiter or python3-redis is missing: "+strings.TrimSpace(string(out)))
	}
	// tests/test_auth.py needs an rlstore with a password.
	auth := rlstoretest.Start(t, rlstoreBin, nil, "--port", "0", "--requirepass", "sekret").Addr(t)
	runEnv(t, []string{"RLSTORE_AUTH_ADDR=" + auth}, "python", python, "-m", "unittest", "discover", "-v", "-s", ".", "-p", "test_*.py", "-t", ".")
}

// limitsVersions are the newer limits releases whose own tests
// TestPythonLimitsSuite runs, with limits itself imported from the same
// source (PyPI is not reachable; suites.sh fetches them into
// $RLSTORE_SUITES/limits-<version>): the last of each major release.
var limitsVersions = []string{"3.14.1", "4.8.0", "5.8.0"}

// TestPythonLimitsSuite runs limits' own Redis storage and strategy tests
// (from $RLSTORE_SUITES, see upstreamSuites) with RlstoreStorage: limits
// 2.8's with Debian's limits 2.8, against one rlstore and one started with
// --requirepass sekret (limits' authenticated Redis), then those of each of
// limitsVersions with that version of limits; every test passes except
// those python/suites/run.py lists with why.
func TestPythonLimitsSuite(t *testing.T) {
	upstreamSuites(t)
	if _, err := os.Stat(python); err != nil {
		missing(t, python+" is not installed")
	}
	probe := exec.Command(python, "-c", "import limits, redis, pytest, pytest_mock, pytest_lazyfixture, deprecated, packaging, typing_extensions")
	if out, err := probe.CombinedOutput(); err != nil {
		missing(t, "python3-pytest, python3-pytest-mock, python3-pytest-lazy-fixture, python3-deprecated, python3-packaging or python3-typing-extensions is missing: "+strings.TrimSpace(string(out)))
	}
	t.Run("2.8", func(t *testing.T) {
		suiteRun(t, "limits", []string{"main", "auth"}, "python", python, "suites/run.py")
	})
	for _, v := range limitsVersions {
		t.Run(v, func(t *testing.T) {
			if _, err := os.Stat(filepath.Join(os.Getenv("RLSTORE_SUITES"), "limits-"+v, "limits")); err != nil {
				t.Fatalf("limits %s's source is not in $RLSTORE_SUITES: run integrations/node/suites/suites.sh again (%v)", v, err)
			}
			suiteRun(t, "limits-"+v, []string{"main"}, "python", python, "suites/run.py", v)
		})
	}
}

// TestPythonSlowAPI runs a Starlette app rate-limited by SlowAPI with
// RlstoreStorage (python/suites/slowapi_app.py). SlowAPI is not in Debian
// and PyPI is not reachable, so its source comes from $RLSTORE_SUITES/slowapi
// (see upstreamSuites: suites.sh fetches v0.1.9); Starlette and httpx are
// Debian's python3-starlette and python3-httpx.
func TestPythonSlowAPI(t *testing.T) {
	upstreamSuites(t)
	if _, err := os.Stat(python); err != nil {
		missing(t, python+" is not installed")
	}
	probe := exec.Command(python, "-c", "import limits, redis, starlette, httpx")
	if out, err := probe.CombinedOutput(); err != nil {
		missing(t, "python3-starlette or python3-httpx is missing: "+strings.TrimSpace(string(out)))
	}
	here, err := filepath.Abs("python")
	if err != nil {
		t.Fatal(err)
	}
	path := here + string(os.PathListSeparator) + filepath.Join(os.Getenv("RLSTORE_SUITES"), "slowapi")
	t.Setenv("PYTHONPATH", path)
	suiteRun(t, "slowapi", []string{"main"}, "python", python, "suites/slowapi_app.py")
}
