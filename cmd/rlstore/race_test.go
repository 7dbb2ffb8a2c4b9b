//go:build race

package main

// raceEnabled makes TestMain build the child binary with -race too, so the
// process tests also check the real shutdown path for races.
const raceEnabled = true
