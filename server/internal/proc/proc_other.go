//go:build !unix

package proc

// ReadCPU returns zeros: only Unix systems say.
func ReadCPU() CPU { return CPU{} }

// OpenFilesLimit is unknown here.
func OpenFilesLimit() (uint64, bool) { return 0, false }
