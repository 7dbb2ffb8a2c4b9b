package shard

// prefetch asks the CPU to bring the cache line holding addr into its
// caches, without waiting for it. It is a hint: it never faults, and an
// address that is no longer the one wanted only wastes the fetch.
//
//go:noescape
func prefetch(addr uintptr)
