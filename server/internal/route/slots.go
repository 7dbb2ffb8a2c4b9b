package route

import (
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// topology is the replies that describe one view to cluster-aware
// clients, encoded once: clients ask for them on every connect and on
// every redirect, and a view changes only with the membership. slots and
// shards are indexed by RESP version less 2.
type topology struct {
	view   *cluster.View
	slots  [2][]byte                 // CLUSTER SLOTS
	shards [2][]byte                 // CLUSTER SHARDS
	addrs  map[string]string         // the RESP address of each node ever seen, by name
	nodes  atomic.Pointer[nodesText] // CLUSTER NODES' text, for the latest known set asked about
}

// topologyOf returns v's replies, from the cache while v is the view they
// were made for.
func (rt *Router) topologyOf(v *cluster.View) *topology {
	prev := rt.topo.Load()
	if prev != nil && prev.view == v {
		return prev
	}
	var seen map[string]string
	if prev != nil {
		seen = prev.addrs
	}
	r := &topology{view: v, addrs: rememberAddrs(seen, v)}
	for resp := 2; resp <= 3; resp++ {
		r.slots[resp-2] = appendClusterSlots(nil, v.Table, resp)
		r.shards[resp-2] = appendClusterShards(nil, v.Table, resp)
	}
	rt.topo.Store(r)
	return r
}

// respIndex is c's index into topology's replies.
func respIndex(x *core.Session) int {
	if x.Proto == 3 {
		return 1
	}
	return 0
}

// appendClusterSlots appends CLUSTER SLOTS' reply for t, in slot order,
// as Redis 7 writes it: [start, end, [host, port, id, {}]] per range. The
// map would name a hostname; rlstore advertises none.
func appendClusterSlots(b []byte, t *cluster.Table, resp int) []byte {
	type row struct {
		r cluster.Range
		n int
	}
	var rows []row
	entries := make([][]byte, len(t.Nodes())) // each node's entry, encoded once
	for i, n := range t.Nodes() {
		host, port := SplitAddr(n.Addr)
		e := appendHeader(nil, '*', 4)
		e = appendInt(appendBulk(e, host), port)
		entries[i] = appendMapHeader(appendBulk(e, NodeID(n.Name)), resp, 0)
		for _, r := range t.Ranges(n.Name) {
			rows = append(rows, row{r, i})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return a.r.From - b.r.From })
	b = appendHeader(b, '*', len(rows))
	for _, rw := range rows {
		b = appendHeader(b, '*', 3)
		b = appendInt(appendInt(b, rw.r.From), rw.r.To)
		b = append(b, entries[rw.n]...)
	}
	return b
}

// appendClusterShards appends CLUSTER SHARDS' reply for t: one shard per
// node, a master with its slot ranges and no replicas.
func appendClusterShards(b []byte, t *cluster.Table, resp int) []byte {
	b = appendHeader(b, '*', len(t.Nodes()))
	for _, n := range t.Nodes() {
		rs := t.Ranges(n.Name)
		b = appendBulk(appendMapHeader(b, resp, 2), "slots")
		b = appendHeader(b, '*', 2*len(rs))
		for _, r := range rs {
			b = appendInt(appendInt(b, r.From), r.To)
		}
		host, port := SplitAddr(n.Addr)
		b = appendHeader(appendBulk(b, "nodes"), '*', 1)
		b = appendMapHeader(b, resp, 7)
		b = appendBulk(appendBulk(b, "id"), NodeID(n.Name))
		b = appendInt(appendBulk(b, "port"), port)
		b = appendBulk(appendBulk(b, "ip"), host)
		b = appendBulk(appendBulk(b, "endpoint"), host)
		b = appendBulk(appendBulk(b, "role"), "master")
		b = appendInt(appendBulk(b, "replication-offset"), 0)
		b = appendBulk(appendBulk(b, "health"), "online")
	}
	return b
}

func appendHeader(b []byte, kind byte, n int) []byte {
	b = strconv.AppendInt(append(b, kind), int64(n), 10)
	return append(b, '\r', '\n')
}

// appendMapHeader appends a map of n pairs' header: RESP3's own, or the
// flat array RESP2 clients read maps from.
func appendMapHeader(b []byte, resp, n int) []byte {
	if resp == 3 {
		return appendHeader(b, '%', n)
	}
	return appendHeader(b, '*', 2*n)
}

func appendInt(b []byte, n int) []byte { return appendHeader(b, ':', n) }

func appendBulk(b []byte, s string) []byte {
	b = appendHeader(b, '$', len(s))
	return append(append(b, s...), '\r', '\n')
}
