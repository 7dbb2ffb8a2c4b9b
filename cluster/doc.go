// Package cluster is reserved for rlstore's cluster (SPEC §9: memberlist
// gossip, a rendezvous-hashed ring and node-to-node forwarding). It holds no
// code yet; a single node is all that is built.
package cluster
