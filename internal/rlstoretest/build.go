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
