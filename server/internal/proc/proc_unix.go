//go:build unix

package proc

import "syscall"

// ReadCPU returns the CPU time used so far, from getrusage(2).
func ReadCPU() CPU {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return CPU{Sys: seconds(self.Stime), User: seconds(self.Utime),
		ChildrenSys: seconds(children.Stime), ChildrenUser: seconds(children.Utime)}
}

func seconds(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// OpenFilesLimit returns how many descriptors the process may open, if the system says.
func OpenFilesLimit() (uint64, bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, false
	}
	return uint64(rl.Cur), true //nolint:unconvert // Cur is int64 on some systems
}
