package proc

// CPU is the CPU time the process and its waited-for children have used,
// in seconds, in system and in user mode; all zero where the system does
// not say (Read).
type CPU struct {
	Sys, User, ChildrenSys, ChildrenUser float64
}
