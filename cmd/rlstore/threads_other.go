//go:build !linux

package main

import "errors"

// readCPU cannot sample the host's CPU time here: auto keeps Go's default.
func readCPU() (cpuSample, float64, error) {
	return cpuSample{}, 0, errors.New("no /proc/stat on this platform")
}
