package route

import (
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// The CLUSTER subcommands that tools call beside the ones clients route
// by: counting and listing a slot's keys, the links to other nodes, and a
// node's replicas, with Redis 7's replies and errors.

// clusterToolCommands are CLUSTER's subcommands for tools.
func (rt *Router) clusterToolCommands() []core.Command {
	return []core.Command{
		{Name: "countkeysinslot", Arity: 3, Run: rt.cmdClusterCountKeys, Summary: "Counts the keys this node holds in a slot"},
		{Name: "getkeysinslot", Arity: 4, Run: rt.cmdClusterGetKeys, Summary: "Lists up to count of the keys this node holds in a slot"},
		{Name: "links", Arity: 2, Run: rt.cmdClusterLinks, Summary: "Lists this node's links to the others it forwards to"},
		{Name: "replicas", Arity: 3, Run: rt.cmdClusterReplicas, Summary: "Lists a node's replicas: none, as rlstore's backups are no Redis replicas"},
		{Name: "slaves", Arity: 3, Run: rt.cmdClusterReplicas, Summary: "Lists a node's replicas (CLUSTER REPLICAS)"},
	}
}

// slotKeys visits the keys this node holds in slot, a SCAN's step at a
// time, until each returns false. It is O(keys): Redis keeps an index per
// slot, rlstore hashes keys to shards, not slots.
func (rt *Router) slotKeys(slot int, each func(key []byte) bool) {
	var keys [][]byte
	now := rt.unixNano()
	for cursor := uint64(0); ; {
		keys, cursor = rt.store.Scan(keys[:0], cursor, 1024)
		for _, k := range keys {
			if cluster.Slot(policy.Route(k)) != slot {
				continue
			}
			if rt.live.Live(k, now) && !each(k) {
				return
			}
		}
		if cursor == 0 {
			return
		}
	}
}

// slotArg parses a slot number, with Redis's errors.
func slotArg(x *core.Session, b []byte, invalid string) (int, bool) {
	n, ok := policy.ParseInt(b)
	switch {
	case !ok:
		x.Out.WriteError(errNotInt)
		return 0, false
	case n < 0 || n >= cluster.Slots:
		x.Out.WriteError(invalid)
		return 0, false
	}
	return int(n), true
}

// cmdClusterCountKeys is CLUSTER COUNTKEYSINSLOT slot.
func (rt *Router) cmdClusterCountKeys(x *core.Session, args [][]byte) {
	if rt.clusterView(x) == nil {
		return
	}
	slot, ok := slotArg(x, args[2], "ERR Invalid slot")
	if !ok {
		return
	}
	n := int64(0)
	rt.slotKeys(slot, func([]byte) bool { n++; return true })
	x.Out.WriteInt64(n)
}

// cmdClusterGetKeys is CLUSTER GETKEYSINSLOT slot count.
func (rt *Router) cmdClusterGetKeys(x *core.Session, args [][]byte) {
	if rt.clusterView(x) == nil {
		return
	}
	const invalid = "ERR Invalid slot or number of keys"
	count, ok := policy.ParseInt(args[3])
	if !ok {
		x.Out.WriteError(errNotInt)
		return
	}
	slot, ok := slotArg(x, args[2], invalid)
	if !ok {
		return
	}
	if count < 0 {
		x.Out.WriteError(invalid)
		return
	}
	var keys [][]byte
	if count > 0 {
		rt.slotKeys(slot, func(k []byte) bool { keys = append(keys, k); return int64(len(keys)) < count })
	}
	x.Out.WriteArray(len(keys))
	for _, k := range keys {
		x.Out.WriteBulk(k)
	}
}

// cmdClusterLinks is CLUSTER LINKS: one outbound link per member this node
// has forwarded to, in Redis 7's form. Its events are "rw" and its buffers
// 0: the forwarding pool does not expose them.
func (rt *Router) cmdClusterLinks(x *core.Session, args [][]byte) {
	v := rt.clusterView(x)
	if v == nil {
		return
	}
	var links []core.Pair
	for _, m := range v.Members {
		if ps, ok := rt.peers.Load(m.Name); ok && m.Name != v.Self {
			links = append(links, core.Pair{Key: m.Name, Val: ps.(*peerStats).created.Load()})
		}
	}
	x.Out.WriteArray(len(links))
	for _, l := range links {
		core.WriteMap(x, []core.Pair{{Key: "direction", Val: "to"}, {Key: "node", Val: NodeID(l.Key)}, {Key: "create-time", Val: l.Val},
			{Key: "events", Val: "rw"}, {Key: "send-buffer-allocated", Val: 0}, {Key: "send-buffer-used", Val: 0}})
	}
}

// cmdClusterReplicas is CLUSTER REPLICAS node-id (and SLAVES): every node
// is a primary with no Redis replica, so a known node's list is empty.
func (rt *Router) cmdClusterReplicas(x *core.Session, args [][]byte) {
	v := rt.clusterView(x)
	if v == nil {
		return
	}
	for _, m := range v.Members {
		if NodeID(m.Name) == string(args[2]) {
			x.Out.WriteArray(0)
			return
		}
	}
	x.Out.WriteError("ERR Unknown node " + string(args[2]))
}

// clusterMessages are CLUSTER INFO's message totals: the requests this
// node sent to other nodes over its links (forwards), and those it got.
func (rt *Router) clusterMessages() []core.Pair {
	return []core.Pair{
		{Key: "cluster_stats_messages_sent", Val: rt.forwarded.Load()},
		{Key: "cluster_stats_messages_received", Val: rt.hops.Load()},
	}
}

func unixMilliNow() int64 { return time.Now().UnixMilli() }
