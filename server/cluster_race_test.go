//go:build race

package server

// clusterUnderRace skips the 10-node cluster tests: ten memberlists on two
// cores under the race detector miss probes and declare each other dead.
const clusterUnderRace = true
