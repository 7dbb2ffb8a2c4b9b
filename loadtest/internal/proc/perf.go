package proc

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PerfProfile samples process pid's CPU with Linux perf for d and returns
// its top hottest functions, one "share  [user|kernel]  symbol" line each.
// It samples from outside, kernel included, which rlstore's --pprof-addr does not. It fails
// when perf is missing or may not trace the process.
func PerfProfile(ctx context.Context, pid int, d time.Duration, top int) ([]string, error) {
	if _, err := exec.LookPath("perf"); err != nil {
		return nil, fmt.Errorf("loadtest: perf is not installed")
	}
	dir, err := os.MkdirTemp("", "rlload-perf-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	data := filepath.Join(dir, "perf.data")
	secs := strconv.FormatFloat(d.Seconds(), 'f', 1, 64)
	rec := exec.CommandContext(ctx, "perf", "record", "-F", "499", "-p", strconv.Itoa(pid), "-o", data, "--", "sleep", secs)
	if out, err := rec.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("loadtest: perf record: %v: %s", err, out)
	}
	out, err := exec.CommandContext(ctx, "perf", "report", "-i", data, "--stdio", "--no-children", "--sort", "symbol").Output()
	if err != nil {
		return nil, fmt.Errorf("loadtest: perf report: %w", err)
	}
	return hottest(string(out), top), nil
}

// hottest keeps the first top sample lines of a perf report, those reading
// "12.34%  [.]  symbol" ([k] for the kernel).
func hottest(report string, top int) []string {
	var lines []string
	for line := range strings.Lines(report) {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[0], "%") || (f[1] != "[.]" && f[1] != "[k]") {
			continue
		}
		where := map[string]string{"[.]": "user", "[k]": "kernel"}[f[1]]
		lines = append(lines, fmt.Sprintf("%7s  %-6s  %s", f[0], where, f[2]))
		if len(lines) == top {
			break
		}
	}
	return lines
}
