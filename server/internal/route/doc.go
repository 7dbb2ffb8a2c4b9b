// Package route is a cluster node's router: where each keyed command runs
// (here, under the handoff's barrier, or at its slot's owner), the forwards
// to the other nodes and the replies that complete later, the node-to-node
// commands' entry (the RL.PEER handshake and dispatch, RL.HOP), the
// cluster commands clients route by (CLUSTER, RL.CLUSTER), the nudge that
// makes a slot-routing client reload its map, and the policies' versions
// across the nodes. It is the top of the cluster stack: it asks the
// handoff (package handoff) where a slot stands and hands it, and the
// replicator (package replica), the peers' requests. The server reaches
// it through Router, set once by Config with small delegates (Runner,
// Conns, Gate, Keys, Regions, Policies), and each connection's state is a
// Conn in the session's slot that only the router reaches. See
// docs/cluster.md and docs/internals.md.
package route
