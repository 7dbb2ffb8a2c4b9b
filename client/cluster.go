package client

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// ClusterReloadInterval is how often ClusterOptions' client reloads its
// slot map while it sends commands. go-redis reloads it on MOVED or ASK,
// and otherwise every 60 s: after a node dies, nothing answers MOVED for
// its slots (the client dials the dead address), so without this the
// client fails them for up to a minute after the cluster has moved them.
// Half a second keeps that window within failure detection plus a second
// (docs/clients.md); each reload is one CLUSTER SLOTS, which rlstore
// answers from a cache (about 48 KB for 3 nodes).
const ClusterReloadInterval = 500 * time.Millisecond

// ClusterOptions returns go-redis ClusterClient options for an rlstore
// cluster whose nodes include addrs, with the settings docs/clients.md
// recommends: set the rest (passwords, TLS, pool sizes) on the result.
//
//	rdb := redis.NewClusterClient(client.ClusterOptions("10.0.0.1:6379", "10.0.0.2:6379"))
//	c := client.New(rdb)
func ClusterOptions(addrs ...string) *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: ClusterReloadInterval}
}
