//go:build unix

package rlstoretest

import (
	"os"
	"strconv"
	"syscall"
)

// NoInheritedFiles marks every file this process holds above standard
// error close-on-exec, so that the processes its tests start (rlstore,
// redis-server, tmux's server) hold none of the files it inherited.
// `flock heavy.lock go test ...` passes the lock down to the test binary,
// and a child still running after its test was killed (its t.Cleanup never
// ran) held that lock for good, stopping every other run that waits on it.
// Files Go opens are close-on-exec already. Where /proc/self/fd is missing
// (not Linux) it does nothing.
func NoInheritedFiles() {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return
	}
	for _, e := range ents {
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
}
