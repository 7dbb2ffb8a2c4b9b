// Package shard is rlstore's key-hash-sharded, lock-striped store of per-key rate-limit state.
package shard
