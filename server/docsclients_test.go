package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docExample is one fenced code block of docs/clients.md.
type docExample struct {
	lang, code string
}

var fenceRE = regexp.MustCompile("(?ms)^```(go|js|python)\n(.*?)^```")

// clientsDocExamples returns the examples of docs/clients.md that connect to
// localhost:6379, the ones a reader would run.
func clientsDocExamples(t *testing.T) []docExample {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "docs", "clients.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	for _, m := range fenceRE.FindAllStringSubmatch(string(text), -1) {
		if strings.Contains(m[2], "localhost:6379") {
			out = append(out, docExample{lang: m[1], code: m[2]})
		}
	}
	return out
}

// TestClientsDocExamples runs every example of docs/clients.md against a
// server, with its address in place of localhost:6379: the Go ones with go
// run, the JavaScript ones with node (node-redis's with version 4 and 5), the
// Python one with Debian's redis-py.
func TestClientsDocExamples(t *testing.T) {
	examples := clientsDocExamples(t)
	if len(examples) != 6 {
		t.Fatalf("docs/clients.md has %d runnable examples, want 6 (one per client library)", len(examples))
	}
	_, addr := startServer(t, Config{})
	for _, ex := range examples {
		code := strings.ReplaceAll(ex.code, "localhost:6379", addr)
		switch ex.lang {
		case "go":
			runDocGo(t, code)
		case "python":
			runDocPython(t, code)
		case "js":
			if strings.Contains(code, "from 'redis'") {
				runDocNode(t, strings.ReplaceAll(code, "from 'redis'", "from 'redis4'"))
				runDocNode(t, strings.ReplaceAll(code, "from 'redis'", "from 'redis5'"))
				continue
			}
			runDocNode(t, code)
		}
	}
}

func runDocGo(t *testing.T, code string) {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	if err := os.WriteFile(file, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	// go test puts the go tool that runs it first in PATH.
	runDoc(t, ".", "go", "run", file) // in this module, which requires every library the examples use
}

func runDocPython(t *testing.T, code string) {
	t.Helper()
	if _, err := os.Stat(debianPython); err != nil {
		runtimeMissing(t, debianPython+" is not installed")
	}
	runDoc(t, ".", debianPython, "-c", code)
}

func runDocNode(t *testing.T, code string) {
	t.Helper()
	node := needNode(t)
	f, err := os.CreateTemp(scriptsDir(), "doc-example-*.mjs") // beside node_modules, so imports resolve
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(f.Name()) })
	if _, err := f.WriteString(code); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	runDoc(t, scriptsDir(), node, filepath.Base(f.Name()))
}

func runDoc(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, out)
	}
	t.Logf("%s", out)
}
