package proc

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// userHZ is the unit of /proc/<pid>/stat's CPU times, fixed by the Linux ABI.
const userHZ = 100

// CPU returns the user plus system CPU time process pid has used, summed
// over its threads. CPU time per request is steadier than throughput on a
// shared host: other work slows a server down but does not make each
// request cost more cycles.
func CPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("loadtest: read CPU time: %w", err)
	}
	// The command name in parentheses may hold spaces; fields count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("loadtest: malformed /proc/%d/stat", pid)
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("loadtest: short /proc/%d/stat", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("loadtest: malformed CPU times in /proc/%d/stat", pid)
	}
	return time.Duration(utime+stime) * time.Second / userHZ, nil
}

// SelfCPU returns the CPU time this process has used, for the client's own
// cost per request; 0 when the platform cannot tell.
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
