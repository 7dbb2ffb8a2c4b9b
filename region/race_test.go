//go:build race

package region

// underRace shortens the simulation: it is single-goroutine, so the race
// detector only slows it down.
const underRace = true
