// Package replica is the bottom of the cluster stack: the replicas. Every
// slot's owner ships its changed keys to the slot's runner-up, its backup
// (shipPeer, ship.go, chunks.go); the backup keeps them as copies it never
// serves (copies.go), promotes them into its store when it takes a dead
// owner's slot over, and records whose full sync brought each slot's
// copies (syncs.go), which tells a lost slot from a held one.
//
// The Replicator reaches the node it runs in through a Delegate set once
// at New, as memberlist's Config and delegates do, never through the
// server, and it imports only what its row of internal/layers allows.
package replica
