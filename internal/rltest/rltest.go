// Package rltest builds the rlstore binary from this checkout and runs it on a free loopback port for tests.
package rltest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// startTimeout bounds the wait for the ready line; a start takes milliseconds.
const startTimeout = 30 * time.Second

var readyRE = regexp.MustCompile(`msg="ready to accept connections" addr=(\S+)`)

// Main builds rlstore into a temporary folder, runs the package's tests and
// removes the folder. Call it from TestMain.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "rltest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rltest:", err)
		os.Exit(2)
	}
	bin := filepath.Join(dir, "rlstore")
	if err := build(bin); err != nil {
		fmt.Fprintln(os.Stderr, "rltest:", err)
		os.RemoveAll(dir)
		os.Exit(2)
	}
	binMu.Lock()
	binPath = bin
	binMu.Unlock()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	binMu   sync.Mutex
	binPath string // set by Main; the one package-level state, because TestMain has no other way to hand it to tests
)

// Root is the checkout's root folder (where go.mod is).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func build(bin string) error {
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/rlstore")
	cmd.Dir = Root()
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build ./cmd/rlstore: %v\n%s", err, out)
	}
	return nil
}

// Start runs rlstore with --port 0 and args until the test ends and returns
// its address ("127.0.0.1:NNNNN").
func Start(tb testing.TB, args ...string) string {
	tb.Helper()
	binMu.Lock()
	bin := binPath
	binMu.Unlock()
	if bin == "" {
		tb.Fatal("rltest: call rltest.Main from TestMain")
	}
	cmd := exec.Command(bin, append([]string{"--port", "0", "--bind", "127.0.0.1"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := make(chan string, 1)
	go scanReady(stderr, addr)
	select {
	case a, ok := <-addr:
		if !ok {
			tb.Fatal("rltest: rlstore exited before it was ready")
		}
		return a
	case <-time.After(startTimeout):
		tb.Fatal("rltest: rlstore did not log its address")
	}
	return ""
}

// scanReady sends the address from the ready line, then drains the log so the
// child never blocks on a full pipe.
func scanReady(r io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		if m := readyRE.FindStringSubmatch(sc.Text()); m != nil && !sent {
			addr <- strings.TrimSpace(m[1])
			sent = true
		}
	}
	if !sent {
		close(addr)
	}
}
