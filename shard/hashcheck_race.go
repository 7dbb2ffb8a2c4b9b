//go:build race

package shard

// checkHashes makes DecideHashed check the hash it is given, in race-enabled
// builds, which the tests use.
const checkHashes = true
