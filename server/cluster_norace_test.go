//go:build !race

package server

const clusterUnderRace = false
