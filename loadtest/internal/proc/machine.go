package proc

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// Machine describes where a benchmark ran.
type Machine struct {
	CPU     string `json:"cpu"`
	Cores   int    `json:"cores"`
	Memory  string `json:"memory"`
	Kernel  string `json:"kernel"`
	Go      string `json:"go"`
	Redis   string `json:"redis"`
	Commit  string `json:"commit"`
	LoadAvg string `json:"loadavg"` // at the start: other work on the host skews every number
}

// DescribeMachine reads what it can; unknown fields stay empty.
func DescribeMachine(ctx context.Context, redisBin string) Machine {
	return Machine{
		CPU:     procField("/proc/cpuinfo", "model name"),
		Cores:   runtime.NumCPU(),
		Memory:  procField("/proc/meminfo", "MemTotal"),
		Kernel:  readTrim("/proc/sys/kernel/osrelease"),
		Go:      runtime.Version(),
		Redis:   output(ctx, redisBin, "--version"),
		Commit:  output(ctx, "git", "rev-parse", "--short", "HEAD"),
		LoadAvg: readTrim("/proc/loadavg"),
	}
}

func procField(path, field string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == field {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func readTrim(path string) string {
	b, _ := os.ReadFile(path)
	return strings.TrimSpace(string(b))
}

func output(ctx context.Context, name string, args ...string) string {
	if name == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}
