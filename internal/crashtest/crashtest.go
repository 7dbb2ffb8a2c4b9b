// Package crashtest runs a test's own binary as a child process and kills it with SIGKILL at a chosen step, for kill -9 tests.
package crashtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// childEnv, when set, makes a test binary run the child side of a kill -9
// test: its value is "test name:argument".
const childEnv = "RLSTORE_CRASHTEST_CHILD"

// Child returns the argument KillAfter gave, if this process is t's child.
// A kill -9 test starts with it: the child does the work, the parent checks.
func Child(t testing.TB) (string, bool) {
	name, arg, ok := strings.Cut(os.Getenv(childEnv), ":")
	return arg, ok && name == t.Name()
}

// Step reports a step the child has made durable; the parent may kill it at
// any moment after.
func Step(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }

// Exit ends a child that was not killed: with err, it tells the parent, which fails.
func Exit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stdout, "error:", err)
		os.Exit(1)
	}
	time.Sleep(time.Minute) // the parent kills us long before, or fails on our exit
	os.Exit(2)
}

// KillAfter runs t again as a child with arg, reads the steps it reports
// until one equals want, then kills it with SIGKILL at once.
func KillAfter(t testing.TB, arg, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name()+":"+arg)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	defer cmd.Wait()
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		require.NotContains(t, lines.Text(), "error:")
		if lines.Text() == want {
			require.NoError(t, cmd.Process.Kill())
			return
		}
	}
	t.Fatalf("child ended before printing %q: %v", want, lines.Err())
}
