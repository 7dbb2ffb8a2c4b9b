//go:build race

package gateway_test

// underRace: the race detector makes sync.Pool drop items at random, so
// allocation counts mean nothing under it.
const underRace = true
