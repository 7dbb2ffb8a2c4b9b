//go:build !unix

package server

// infoCPU is INFO cpu, which only Unix systems fill in.
func (s *Server) infoCPU() []pair {
	return []pair{{"used_cpu_sys", "0.000000"}, {"used_cpu_user", "0.000000"},
		{"used_cpu_sys_children", "0.000000"}, {"used_cpu_user_children", "0.000000"}}
}
