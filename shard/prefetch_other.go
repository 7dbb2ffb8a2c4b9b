//go:build !amd64

package shard

// prefetch does nothing where no prefetch instruction is wired up.
func prefetch(addr uintptr) {}
