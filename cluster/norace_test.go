//go:build !race

package cluster

const underRace = false
