//go:build unix

package server

import "syscall"

// openFilesLimit returns how many descriptors the process may open, if the system says.
func openFilesLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true //nolint:unconvert // Cur is int64 on some systems
}
