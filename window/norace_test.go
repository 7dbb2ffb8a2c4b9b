//go:build !race

package window

const underRace = false
