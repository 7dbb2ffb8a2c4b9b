//go:build race

package cluster

// underRace skips the 1000-member simulation: it is single-goroutine
// arithmetic, which the race detector only slows down.
const underRace = true
