//go:build !race

package shard

// checkHashes makes DecideHashed check the hash it is given; see hashcheck_race.go.
const checkHashes = false
