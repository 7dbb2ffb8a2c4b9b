package persistence

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childEnv, when set, makes a test binary run the child side of a kill -9 test:
// its value is "test name:data dir".
const childEnv = "RLSTORE_PERSISTENCE_CHILD"

// childDir returns the data dir if this process is test's child.
func childDir(t *testing.T) (string, bool) {
	name, dir, ok := strings.Cut(os.Getenv(childEnv), ":")
	return dir, ok && name == t.Name()
}

// child reports a durable step to the parent, which may kill it at any moment after.
func child(format string, args ...any) { fmt.Fprintf(os.Stdout, format+"\n", args...) }

// childExit ends a child that was not killed, or failed.
func childExit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stdout, "error:", err)
		os.Exit(1)
	}
	time.Sleep(time.Minute) // the parent kills us long before
	os.Exit(2)
}

// killAfter runs this test as a child with dir, reads its lines until one
// equals want, then kills it with SIGKILL at once.
func killAfter(t *testing.T, dir, want string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+t.Name()+":"+dir)
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

// TestPoliciesKill9: a policy is there after kill -9 issued right after Put returned.
func TestPoliciesKill9(t *testing.T) {
	if dir, ok := childDir(t); ok {
		p, _, err := OpenPolicies(dir)
		for i := 0; err == nil; i++ {
			if err = p.Put(fmt.Sprintf("policy%d", i), fmt.Appendf(nil, "SLIDE %d 60", i)); err == nil {
				child("ok %d", i)
			}
		}
		childExit(err)
	}
	dir := t.TempDir()
	killAfter(t, dir, "ok 40")
	p, warns, err := OpenPolicies(dir)
	require.NoError(t, err)
	defer p.Close()
	t.Logf("after kill -9: %d policies, warnings %v", len(p.List()), warns)
	for i := range 41 {
		def, ok := p.Get(fmt.Sprintf("policy%d", i))
		require.Truef(t, ok, "policy%d acknowledged but lost", i)
		assert.Equal(t, fmt.Sprintf("SLIDE %d 60", i), string(def))
	}
}

// TestStoreKill9Always: under FsyncAlways every decision acknowledged (Commit
// returned) before kill -9 is loaded afterwards.
func TestStoreKill9Always(t *testing.T) {
	c := newClock()
	if dir, ok := childDir(t); ok {
		st, _, err := Open(dir, newMap(t, 16), c.opts(FsyncAlways))
		for i := 0; err == nil; i++ {
			if _, err = st.m.Decide(fmt.Appendf(nil, "k%d", i), tokenP, c.nano(), 1+int64(i%5), false); err == nil {
				if err = st.Commit(); err == nil {
					child("ok %d", i)
				}
			}
		}
		childExit(err)
	}
	dir := t.TempDir()
	killAfter(t, dir, "ok 300")
	st, m, _ := openStore(t, dir, c.opts(FsyncAlways))
	defer st.Close()
	for i := range 301 {
		inf, ok := m.Get(fmt.Appendf(nil, "k%d", i), c.nano())
		require.Truef(t, ok, "k%d acknowledged but lost", i)
		assert.Equalf(t, tokenP.Limit-1-int64(i%5), inf.Count, "k%d tokens", i)
	}
}
