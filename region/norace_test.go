//go:build !race

package region

const underRace = false
