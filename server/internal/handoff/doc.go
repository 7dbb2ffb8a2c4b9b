// Package handoff is a cluster node's handoff: the view routing uses and
// the hooks that run when it changes, each moving slot's state (Redis
// Cluster's MIGRATING and IMPORTING), the migrations that copy a slot's
// keys to its new owner and cut it, the imports that wait for them, the
// serving lease's checks, and what a node does after it was declared dead.
// It answers the node-to-node requests of the handoff (RL.PEER IMPORT,
// DONE, PULL, RELEASED and SEED), and holds the replicator (package
// replica), whose delegate it is. It knows no router: the router (package
// route) asks it where a slot stands (State, MayServe) and passes it the
// peers' requests.
// See docs/cluster.md and docs/internals.md.
package handoff
