package main

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// readCPU samples the host's CPU time from /proc/stat and the process's
// own from getrusage, and counts the host's cores.
func readCPU() (cpuSample, float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSample{}, 0, err
	}
	s, cores, err := parseProcStat(string(b))
	if err != nil {
		return cpuSample{}, 0, err
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return cpuSample{}, 0, err
	}
	s.self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	s.at = time.Now()
	return s, cores, nil
}

// parseProcStat reads /proc/stat's cpu line (user nice system idle iowait
// irq softirq steal guest guest_nice, in ticks; guest time is already in
// user) and counts its cpuN lines.
func parseProcStat(text string) (cpuSample, float64, error) {
	var s cpuSample
	cores, found := 0, false
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || !strings.HasPrefix(f[0], "cpu"):
		case f[0] != "cpu":
			cores++
		case len(f) < 9:
			return s, 0, errors.New("/proc/stat: a cpu line too short")
		default:
			var t [8]uint64
			for i := range t {
				v, err := strconv.ParseUint(f[i+1], 10, 64)
				if err != nil {
					return s, 0, errors.New("/proc/stat: " + err.Error())
				}
				t[i] = v
			}
			s.hostBusy = t[0] + t[1] + t[2] + t[5] + t[6] + t[7]
			s.hostAll = s.hostBusy + t[3] + t[4]
			found = true
		}
	}
	if !found || cores == 0 {
		return s, 0, errors.New("/proc/stat: no cpu lines")
	}
	return s, float64(cores), nil
}
