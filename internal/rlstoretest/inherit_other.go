//go:build !unix

package rlstoretest

// NoInheritedFiles does nothing here: see inherit_unix.go.
func NoInheritedFiles() {}
