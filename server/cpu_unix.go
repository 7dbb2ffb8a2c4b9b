//go:build unix

package server

import (
	"strconv"
	"syscall"
)

// infoCPU is INFO cpu: the CPU seconds the process and its children have
// used, from getrusage(2), as Redis shows them.
func (s *Server) infoCPU() []pair {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return []pair{
		{"used_cpu_sys", cpuSeconds(self.Stime)},
		{"used_cpu_user", cpuSeconds(self.Utime)},
		{"used_cpu_sys_children", cpuSeconds(children.Stime)},
		{"used_cpu_user_children", cpuSeconds(children.Utime)},
	}
}

func cpuSeconds(t syscall.Timeval) string {
	return strconv.FormatFloat(float64(t.Sec)+float64(t.Usec)/1e6, 'f', 6, 64)
}
