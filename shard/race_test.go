//go:build race

package shard

// underRace shortens single-goroutine fills, which the race detector only slows.
const underRace = true
