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
	sock := fmt.Sprintf("rlstore-test-%d-%d", os.Getpid(), time.Now().UnixNano()) // a tmux server of its own
	c.tmux = []string{tmux, "-L", sock, "-f", "/dev/null"}
	shell := strings.Join(append([]string{cli, "-h", host, "-p", port}, args...), " ")
	// The tmux server outlives the test binary when the test is killed
	// before its cleanup, and its redis-cli waits at a prompt for good: a
	// watchdog in the session ends it within a second of the test binary.
	watchdog := fmt.Sprintf("(while kill -0 %d 2>/dev/null; do sleep 1; done; %s kill-server) &",
		os.Getpid(), strings.Join(c.tmux, " "))
	c.run("new-session", "-d", "-x", "160", "-y", "200", watchdog+" "+shell+"; sleep 600")
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
	c.run("send-keys", "-l", line, ";", "send-keys", "Enter")
}

// screen returns the terminal's 200 lines, trailing blank lines trimmed.
func (c *ttyCLI) screen() string {
	c.t.Helper()
	return strings.TrimRight(c.run("capture-pane", "-p", "-J"), "\n ")
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

// command clears the screen (Ctrl-L), runs line and returns what it
// printed, once redis-cli shows its prompt again.
func (c *ttyCLI) command(addr, line string) string {
	c.t.Helper()
	c.run("send-keys", "C-l")
	c.waitScreen("a cleared screen", func(s string) bool { return s == addr+">" })
	c.enter(line)
	echo := addr + "> " + line + "\n"
	s := c.waitScreen(line+" to finish", func(s string) bool {
		return strings.HasPrefix(s, echo) && strings.HasSuffix(s, "\n"+addr+">")
	})
	return strings.TrimSuffix(s[len(echo):], addr+">")
}

// waitScreen polls the screen until done holds and returns it.
func (c *ttyCLI) waitScreen(what string, done func(string) bool) string {
	c.t.Helper()
	var last string
	for end := time.Now().Add(deadline); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if last = c.screen(); done(last) {
			return last
		}
	}
	c.t.Fatalf("waited for %s; the terminal shows:\n%s", what, last)
	return ""
}
