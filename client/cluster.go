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

// ClusterDialerRetries is how many times ClusterOptions' client dials a
// node for one try of a command. go-redis dials 5 times, 100 ms apart, and
// tries a command up to 4 times, so a command for a dead node's slot took
// 1.6 s to fail: an application that waits for each command sent nothing
// else meanwhile, so neither the reload nor the survivors' MOVED (which
// come with other commands) could reach it, and it still erred up to a
// second after the survivors served those slots (docs/clients.md).
const ClusterDialerRetries = 1

// ClusterOptions returns go-redis ClusterClient options for an rlstore
// cluster whose nodes include addrs, with the settings docs/clients.md
// recommends: set the rest (passwords, TLS, pool sizes) on the result.
//
//	rdb := redis.NewClusterClient(client.ClusterOptions("10.0.0.1:6379", "10.0.0.2:6379"))
//	c := client.New(rdb)
func ClusterOptions(addrs ...string) *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: ClusterReloadInterval,
		DialerRetries: ClusterDialerRetries}
}
