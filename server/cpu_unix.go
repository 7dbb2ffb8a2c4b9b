//go:build unix

package server

import (
	"strconv"
	"syscall"

	"github.com/rlstore/rlstore/server/internal/core"
)

// infoCPU is INFO cpu: the CPU seconds the process and its children have
// used, from getrusage(2), as Redis shows them.
func (s *Server) infoCPU() []core.Pair {
	var self, children syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	return []core.Pair{
		{Key: "used_cpu_sys", Val: cpuSeconds(self.Stime)},
		{Key: "used_cpu_user", Val: cpuSeconds(self.Utime)},
		{Key: "used_cpu_sys_children", Val: cpuSeconds(children.Stime)},
		{Key: "used_cpu_user_children", Val: cpuSeconds(children.Utime)},
	}
}

func cpuSeconds(t syscall.Timeval) string {
	return strconv.FormatFloat(float64(t.Sec)+float64(t.Usec)/1e6, 'f', 6, 64)
}
