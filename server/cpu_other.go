//go:build !unix

package server

import "github.com/rlstore/rlstore/server/internal/core"

// infoCPU is INFO cpu, which only Unix systems fill in.
func (s *Server) infoCPU() []core.Pair {
	return []core.Pair{{Key: "used_cpu_sys", Val: "0.000000"}, {Key: "used_cpu_user", Val: "0.000000"},
		{Key: "used_cpu_sys_children", Val: "0.000000"}, {Key: "used_cpu_user_children", Val: "0.000000"}}
}
