package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// ttyCLI is redis-cli run interactively, in a tmux pseudo-terminal, as a
// user runs it: it reads COMMAND DOCS at start and shows hints as one types.
type ttyCLI struct {
	t    *testing.T
	tmux []string // tmux and its private server's socket name
}

// startTTYCLI starts redis-cli against addr with args in a terminal of 160
// columns. It skips the test where tmux or redis-cli is not installed
// (.ci/run installs both).
func startTTYCLI(t *testing.T, addr string, args ...string) *ttyCLI {
	t.Helper()
	tmux, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux is not installed")
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Skip("redis-cli is not installed")
	}
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	c := &ttyCLI{t: t}
	sock := fmt.Sprintf("rlstore-test-%d-%p", os.Getpid(), c) // a tmux server of its own
	c.tmux = []string{tmux, "-L", sock, "-f", "/dev/null"}
	shell := strings.Join(append([]string{cli, "-h", host, "-p", port}, args...), " ")
	c.run("new-session", "-d", "-x", "160", "-y", "50", shell+"; sleep 600")
	t.Cleanup(func() { _ = exec.Command(c.tmux[0], append(c.tmux[1:], "kill-server")...).Run() })
	c.waitFor(addr + ">")
	return c
}

func (c *ttyCLI) run(args ...string) string {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	out, err := exec.CommandContext(ctx, c.tmux[0], append(c.tmux[1:], args...)...).CombinedOutput()
	require.NoError(c.t, err, "tmux %v: %s", args, out)
	return string(out)
}

// typeText types s without pressing Enter.
func (c *ttyCLI) typeText(s string) { c.t.Helper(); c.run("send-keys", "-l", s) }

// enter types line and presses Enter.
func (c *ttyCLI) enter(line string) {
	c.t.Helper()
	c.typeText(line)
	c.run("send-keys", "Enter")
}

// screen returns the terminal's text, with its scrollback, trailing blank lines trimmed.
func (c *ttyCLI) screen() string {
	c.t.Helper()
	return strings.TrimRight(c.run("capture-pane", "-p", "-J", "-S", "-"), "\n ")
}

// waitFor polls the screen until it contains s and returns it.
func (c *ttyCLI) waitFor(s string) string {
	c.t.Helper()
	var last string
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if last = c.screen(); strings.Contains(last, s) {
			return last
		}
	}
	c.t.Fatalf("the terminal never showed %q; it shows:\n%s", s, last)
	return ""
}

// waitPrompt waits until the screen ends with a fresh prompt after the
// output of a command that ran, and returns what the command printed.
func (c *ttyCLI) waitPrompt(addr, line string) string {
	c.t.Helper()
	echo := addr + "> " + line + "\n"
	var last string
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		last = c.screen()
		i := strings.LastIndex(last, echo)
		if i >= 0 && strings.HasSuffix(last, addr+">") {
			return strings.TrimSuffix(last[i+len(echo):], addr+">")
		}
	}
	c.t.Fatalf("%q never finished; the terminal shows:\n%s", line, last)
	return ""
}
