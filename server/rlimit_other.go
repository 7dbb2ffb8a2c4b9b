//go:build !unix

package server

// openFilesLimit is unknown here.
func openFilesLimit() (uint64, bool) { return 0, false }
