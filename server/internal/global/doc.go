// Package global is a server's side of the regions: it decides the keys
// global across regions (docs/regions.md), keeps their copies in the key
// store, and syncs them with the other regions over one link each.
//
// The model (region.Store, pure and single-threaded) is in the top-level
// region package; this package is its runtime in a node: the lock around
// it, the sync loop, the links, RL.PEER REGION's answer, INFO regions and
// the metrics. It reaches the node through a Delegate set once at New, as
// memberlist's Config and delegates do, never through the server, and it
// imports only what its row of internal/layers allows.
package global
