package main

import (
	"os"
	"os/exec"
	"testing"
)

// needNetns skips a test that builds network namespaces where it cannot:
// without root, or without one of tools (ip, iptables, tc). Under CI=true
// it fails instead, since .ci/run runs as root and installs them: a
// partition test that skipped there would pass without having run.
func needNetns(t *testing.T, tools ...string) {
	t.Helper()
	why := netnsMissing(tools...)
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: not skipping)", why)
	}
	t.Skip(why)
}

// netnsMissing says why network namespace tests cannot run here, or
// returns "" when they can.
func netnsMissing(tools ...string) string {
	if os.Geteuid() != 0 {
		return "network namespace tests need root"
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			return "network namespace tests need " + tool + " (apt-get install iproute2 iptables)"
		}
	}
	return ""
}
