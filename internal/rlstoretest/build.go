package rlstoretest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Build compiles github.com/rlstore/rlstore/cmd/rlstore into dir, with the
// race detector when race is set, and returns the binary's path. It uses
// the go tool on PATH, which go test puts first.
func Build(dir string, race bool) (string, error) {
	bin := filepath.Join(dir, "rlstore")
	args := []string{"build", "-o", bin}
	if race {
		args = append(args, "-race")
	}
	cmd := exec.Command("go", append(args, "github.com/rlstore/rlstore/cmd/rlstore")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building rlstore: %w\n%s", err, out)
	}
	return bin, nil
}

// MainBuild is a TestMain body for packages whose tests share one binary:
// it builds rlstore into a temporary folder, passes its path to run, and
// removes the folder after. It returns the exit code for os.Exit. The
// processes the tests start inherit none of this one's files
// (NoInheritedFiles).
func MainBuild(race bool, run func(bin string) int) int {
	NoInheritedFiles()
	dir, err := os.MkdirTemp("", "rlstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := Build(dir, race)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return run(bin)
}

// SelfName is the name MainSelf links the test binary under: a test
// binary started under it is rlstore (RunsAsMain).
const SelfName = "rlstore"

// MainSelf is MainBuild for the tests of package main itself
// (cmd/rlstore): rather than build and link rlstore once more (with -race
// when the tests have it: about 13 s on a loaded 2-core host, ahead of
// every test of the package, on CI's longest path), it links the running
// test binary, which holds package main, as SelfName in a temporary
// folder. Started under that name, the package's TestMain runs main
// instead of the tests (RunsAsMain). The child is the binary the tests
// run in, so it has the race detector exactly when they do.
func MainSelf(run func(bin string) int) int {
	NoInheritedFiles()
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	dir, err := os.MkdirTemp("", "rlstore-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, SelfName)
	if err := os.Symlink(self, bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return run(bin)
}

// RunsAsMain reports whether this test binary was started under
// MainSelf's link, to be rlstore rather than run tests.
func RunsAsMain() bool { return filepath.Base(os.Args[0]) == SelfName }

// Main is the whole TestMain of a package whose tests share one plain
// rlstore binary: it builds it, stores its path in *bin for the tests,
// runs them, and returns their exit code for os.Exit.
func Main(m interface{ Run() int }, bin *string) int {
	return MainBuild(false, func(b string) int {
		*bin = b
		return m.Run()
	})
}

// StartPlain runs bin on a free loopback port with no other flags until
// the test ends, and returns its address.
func StartPlain(tb testing.TB, bin string) string {
	tb.Helper()
	return Start(tb, bin, nil, "--port", "0").Addr(tb)
}
