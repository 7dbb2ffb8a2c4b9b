package rlstoretest

import (
	"bytes"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Deadline bounds every wait on a child process.
const Deadline = 30 * time.Second

// envPrefix starts the environment variables rlstore reads its flags from.
const envPrefix = "RLSTORE_"

// Proc is a running rlstore child process.
type Proc struct {
	Cmd    *exec.Cmd
	Log    *SyncBuffer   // everything it wrote to stderr
	Exited chan struct{} // closed once it has exited
}

// Start starts bin with args, and env on top of this process's environment
// without its RLSTORE_* variables, and kills it when the test ends if it is
// still running. A failed test logs what the process wrote to stderr.
func Start(t testing.TB, bin string, env []string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(bin, args...), Log: &SyncBuffer{}, Exited: make(chan struct{})}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			p.Cmd.Env = append(p.Cmd.Env, kv)
		}
	}
	p.Cmd.Env = append(p.Cmd.Env, env...)
	p.Cmd.Stderr = p.Log
	require.NoError(t, p.Cmd.Start())
	go func() { _ = p.Cmd.Wait(); close(p.Exited) }()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("rlstore log:\n%s", p.Log.String())
		}
	})
	return p
}

// Kill kills the process if it is still running and waits for it to exit.
func (p *Proc) Kill() {
	select {
	case <-p.Exited:
	default:
		_ = p.Cmd.Process.Kill()
		<-p.Exited
	}
}

// hasExited reports whether the process has exited, without waiting.
func (p *Proc) hasExited() bool {
	select {
	case <-p.Exited:
		return true
	default:
		return false
	}
}

// WaitLog waits until re matches the process's log and returns the
// submatches. It fails the test if the process exits first or Deadline passes.
func (p *Proc) WaitLog(t testing.TB, re *regexp.Regexp) []string {
	t.Helper()
	require.Eventually(t, func() bool {
		return re.MatchString(p.Log.String()) || p.hasExited()
	}, Deadline, 10*time.Millisecond, "rlstore did not log %v within %v", re, Deadline)
	m := re.FindStringSubmatch(p.Log.String())
	if m == nil {
		t.Fatalf("rlstore exited (code %d) before logging %v", p.Cmd.ProcessState.ExitCode(), re)
	}
	return m
}

// readyLine matches the text-format line that announces the listening address.
const readyLine = `msg="ready to accept connections" addr=(\S+)`

// Addr waits for the ready line of a text-format log and returns the
// address in it: how a test learns the port that --port 0 picked.
func (p *Proc) Addr(t testing.TB) string {
	t.Helper()
	return p.WaitLog(t, regexp.MustCompile(readyLine))[1]
}

// Signal sends sig to the process.
func (p *Proc) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	require.NoError(t, p.Cmd.Process.Signal(sig))
}

// ExitCode waits up to Deadline for the process to exit and returns its exit code.
func (p *Proc) ExitCode(t testing.TB) int {
	t.Helper()
	select {
	case <-p.Exited:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(Deadline):
		t.Fatalf("rlstore did not exit within %v", Deadline)
		return -1
	}
}

// SyncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type SyncBuffer struct {
	mu  sync.Mutex // guards buf
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
