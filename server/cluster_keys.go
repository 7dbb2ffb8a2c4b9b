package server

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
func clusterToolCommands() []command {
	return []command{
		{name: "countkeysinslot", arity: 3, run: cmdClusterCountKeys, summary: "Counts the keys this node holds in a slot"},
		{name: "getkeysinslot", arity: 4, run: cmdClusterGetKeys, summary: "Lists up to count of the keys this node holds in a slot"},
		{name: "links", arity: 2, run: cmdClusterLinks, summary: "Lists this node's links to the others it forwards to"},
		{name: "replicas", arity: 3, run: cmdClusterReplicas, summary: "Lists a node's replicas: none, as rlstore's backups are no Redis replicas"},
		{name: "slaves", arity: 3, run: cmdClusterReplicas, summary: "Lists a node's replicas (CLUSTER REPLICAS)"},
	}
}

// slotKeys visits the keys this node holds in slot, a SCAN's step at a
// time, until each returns false. It is O(keys): Redis keeps an index per
// slot, rlstore hashes keys to shards, not slots.
func (s *Server) slotKeys(slot int, each func(key []byte) bool) {
	var keys [][]byte
	now := s.unixNano()
	for cursor := uint64(0); ; {
		keys, cursor = s.cfg.Store.Scan(keys[:0], cursor, 1024)
		for _, k := range keys {
			if cluster.Slot(policy.Route(k)) != slot {
				continue
			}
			if _, _, live := s.lookup(k, now); live && !each(k) {
				return
			}
		}
		if cursor == 0 {
			return
		}
	}
}

// slotArg parses a slot number, with Redis's errors.
func slotArg(c *client, b []byte, invalid string) (int, bool) {
	n, ok := parseInt(b)
	switch {
	case !ok:
		c.conn.WriteError(errNotInt)
		return 0, false
	case n < 0 || n >= cluster.Slots:
		c.conn.WriteError(invalid)
		return 0, false
	}
	return int(n), true
}

// cmdClusterCountKeys is CLUSTER COUNTKEYSINSLOT slot.
func cmdClusterCountKeys(s *Server, c *client, args [][]byte) {
	if s.clusterView(c) == nil {
		return
	}
	slot, ok := slotArg(c, args[2], "ERR Invalid slot")
	if !ok {
		return
	}
	n := int64(0)
	s.slotKeys(slot, func([]byte) bool { n++; return true })
	c.conn.WriteInt64(n)
}

// cmdClusterGetKeys is CLUSTER GETKEYSINSLOT slot count.
func cmdClusterGetKeys(s *Server, c *client, args [][]byte) {
	if s.clusterView(c) == nil {
		return
	}
	const invalid = "ERR Invalid slot or number of keys"
	count, ok := parseInt(args[3])
	if !ok {
		c.conn.WriteError(errNotInt)
		return
	}
	slot, ok := slotArg(c, args[2], invalid)
	if !ok {
		return
	}
	if count < 0 {
		c.conn.WriteError(invalid)
		return
	}
	var keys [][]byte
	if count > 0 {
		s.slotKeys(slot, func(k []byte) bool { keys = append(keys, k); return int64(len(keys)) < count })
	}
	c.conn.WriteArray(len(keys))
	for _, k := range keys {
		c.conn.WriteBulk(k)
	}
}

// cmdClusterLinks is CLUSTER LINKS: one outbound link per member this node
// has forwarded to, in Redis 7's form. Its events are "rw" and its buffers
// 0: the forwarding pool does not expose them.
func cmdClusterLinks(s *Server, c *client, args [][]byte) {
	v := s.clusterView(c)
	if v == nil {
		return
	}
	var links []core.Pair
	for _, m := range v.Members {
		if ps, ok := s.cl.peers.Load(m.Name); ok && m.Name != v.Self {
			links = append(links, core.Pair{Key: m.Name, Val: ps.(*peerStats).created.Load()})
		}
	}
	c.conn.WriteArray(len(links))
	for _, l := range links {
		core.WriteMap(&c.Session, []core.Pair{{Key: "direction", Val: "to"}, {Key: "node", Val: nodeID(l.Key)}, {Key: "create-time", Val: l.Val},
			{Key: "events", Val: "rw"}, {Key: "send-buffer-allocated", Val: 0}, {Key: "send-buffer-used", Val: 0}})
	}
}

// cmdClusterReplicas is CLUSTER REPLICAS node-id (and SLAVES): every node
// is a primary with no Redis replica, so a known node's list is empty.
func cmdClusterReplicas(s *Server, c *client, args [][]byte) {
	v := s.clusterView(c)
	if v == nil {
		return
	}
	for _, m := range v.Members {
		if nodeID(m.Name) == string(args[2]) {
			c.conn.WriteArray(0)
			return
		}
	}
	c.conn.WriteError("ERR Unknown node " + string(args[2]))
}

// clusterMessages are CLUSTER INFO's message totals: the requests this
// node sent to other nodes over its links (forwards), and those it got.
func (s *Server) clusterMessages() []core.Pair {
	return []core.Pair{
		{Key: "cluster_stats_messages_sent", Val: s.cl.forwarded.Load()},
		{Key: "cluster_stats_messages_received", Val: s.cl.hops.Load()},
	}
}

func unixMilliNow() int64 { return time.Now().UnixMilli() }
