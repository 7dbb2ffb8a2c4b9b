//go:build race

package window

// underRace shortens the long model traces: they are single-goroutine, so the
// race detector only slows them down.
const underRace = true
