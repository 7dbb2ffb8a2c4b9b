// Package persistence keeps rlstore's state on disk: snapshots, an append-only log of changed keys, and the durable policy store.
package persistence
