package integrations

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/internal/rlstoretest"
)

// suiteRun runs a library's own test suite (name with args, in dir) against
// fresh rlstores, one per server in servers (tapServers), each behind a tap
// (tap_test.go): RLSTORE_ADDR names the "main" one's tap, RLSTORE_AUTH_ADDR
// the "auth" one's. The suite's harness fails the test if the suite's
// outcome is not the one it expects. The tape must then replay cleanly
// against fresh rlstores; with RLSTORE_RECORD=1 it is written to
// testdata/replay/<tape>.tape, which TestReplay replays in CI.
func suiteRun(t *testing.T, tape string, servers []string, dir, name string, args ...string) {
	t.Helper()
	rec := &recorder{}
	var env []string
	for _, s := range servers {
		addr, err := startTapServer(t, s)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, map[string]string{"main": "RLSTORE_ADDR=", "auth": "RLSTORE_AUTH_ADDR="}[s]+startTap(t, rec, s, addr).Addr())
	}
	ctx, cancel := context.WithTimeout(context.Background(), runLimit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	t.Logf("%s %s:\n%s", name, strings.Join(args, " "), tail(string(out), 12))
	rec.mu.Lock() // the suite has ended; its connections may still be closing
	events := append([]event(nil), rec.events...)
	rec.mu.Unlock()
	if bad := replay(t, events); len(bad) > 0 {
		t.Fatalf("the tape does not replay against a fresh rlstore:\n%s", strings.Join(bad, "\n"))
	}
	requests := 0
	for _, e := range events {
		if e.kind == "req" {
			requests++
		}
	}
	t.Logf("tape %s: %d requests, replayed", tape, requests)
	if os.Getenv("RLSTORE_RECORD") == "" {
		return
	}
	header := []string{
		fmt.Sprintf("%s: the RESP traffic of %s %s (in integrations/%s) with rlstore, recorded by the tap (tap_test.go) on %s.", tape, name, strings.Join(args, " "), dir, time.Now().UTC().Format("2006-01-02")),
		"The suite's code is not in this repository (node/suites/suites.sh fetches it); the outcome it gave:",
	}
	for _, l := range strings.Split(tail(string(out), 3), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			header = append(header, "  "+l)
		}
	}
	header = append(header,
		"TestReplay replays it against fresh rlstores, each request at its instant (DEBUG SET-CLOCK). Record again with:",
		"  RLSTORE_SUITES=/tmp/rlstore-suites RLSTORE_RECORD=1 go test -run '"+t.Name()+"' ./integrations/")
	f, err := os.Create(filepath.Join(tapeDir, filepath.Base(tape)+".tape"))
	if err != nil {
		t.Fatal(err)
	}
	if err := writeTape(f, header, events); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// startRlstoreArgs runs rlstore with args until the test ends and returns
// its address.
func startRlstoreArgs(tb testing.TB, args ...string) string {
	tb.Helper()
	return rlstoretest.Start(tb, rlstoreBin, nil, args...).Addr(tb)
}
