// Package cluster holds rlstore's membership, slot ownership and node-to-node forwarding.
package cluster
