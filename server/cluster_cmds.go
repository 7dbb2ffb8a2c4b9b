package server

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// clusterCommands are the Redis Cluster commands cluster-aware clients
// route by, and rlstore's own RL.CLUSTER.
func clusterCommands() []command {
	return []command{
		{name: "cluster", arity: -2, group: "cluster", subs: append([]command{
			{name: "slots", arity: 2, run: cmdClusterSlots, summary: "Lists slot ranges and their owners"},
			{name: "shards", arity: 2, run: cmdClusterShards, summary: "Lists each node's slot ranges"},
			{name: "nodes", arity: 2, run: cmdClusterNodes, summary: "Lists the nodes in Redis Cluster's text format"},
			{name: "myid", arity: 2, run: cmdClusterMyID, summary: "Returns this node's ID"},
			{name: "keyslot", arity: 3, run: cmdClusterKeySlot, summary: "Returns a key's hash slot"},
			{name: "info", arity: 2, run: cmdClusterInfo, summary: "Returns the cluster's state"},
			{name: "help", arity: 2, run: cmdClusterHelp, summary: "Lists CLUSTER's subcommands"},
		}, clusterToolCommands()...)},
		{name: "readonly", arity: 1, run: cmdOK, group: "cluster", summary: "Accepted for cluster clients; changes nothing"},
		{name: "readwrite", arity: 1, run: cmdOK, group: "cluster", summary: "Accepted for cluster clients; changes nothing"},
		{name: "asking", arity: 1, run: cmdOK, group: "cluster", summary: "Accepted for cluster clients; changes nothing"},
		{name: "rl.cluster", arity: -2, group: "cluster", subs: []command{
			{name: "nodes", arity: 2, run: cmdRLClusterNodes, summary: "Lists the members, their state and slot counts"},
			{name: "owner", arity: 3, run: cmdRLClusterOwner, summary: "Names a key's slot, owner and runner-up"},
			{name: "info", arity: 2, run: cmdRLClusterInfo, summary: "Shows this node's view of the cluster"},
			{name: "forget", arity: 3, run: cmdRLClusterForget, summary: "Removes a dead member from the known member set for good"},
			{name: "help", arity: 2, run: cmdRLClusterHelp, summary: "Lists RL.CLUSTER's subcommands"},
		}},
	}
}

func cmdOK(s *Server, c *client, args [][]byte) { c.conn.WriteString("OK") }

// clusterView returns the view, or writes Redis's error for a server
// without a cluster and returns nil.
func (s *Server) clusterView(c *client) *cluster.View {
	if s.cl == nil {
		c.conn.WriteError(errNoCluster)
		return nil
	}
	return s.cl.view()
}

// nodeID is a node's 40-hex-digit ID, as Redis Cluster's look: clients
// parse it. It is derived from the name, so it is the same on every node.
func nodeID(name string) string {
	h := sha1.Sum([]byte(name))
	return hex.EncodeToString(h[:])
}

func splitAddr(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return h, port
}

// cmdClusterSlots is CLUSTER SLOTS, encoded once per view.
func cmdClusterSlots(s *Server, c *client, args [][]byte) {
	if v := s.clusterView(c); v != nil {
		c.conn.WriteRaw(s.cl.topologyOf(v).slots[respIndex(c)])
	}
}

// cmdClusterShards is CLUSTER SHARDS: one shard per node, with its ranges.
func cmdClusterShards(s *Server, c *client, args [][]byte) {
	if v := s.clusterView(c); v != nil {
		c.conn.WriteRaw(s.cl.topologyOf(v).shards[respIndex(c)])
	}
}

// cmdClusterNodes is CLUSTER NODES, in Redis Cluster's line format.
func cmdClusterNodes(s *Server, c *client, args [][]byte) {
	if v := s.clusterView(c); v != nil {
		c.conn.WriteBulk(s.cl.topologyOf(v).nodes)
	}
}

func cmdClusterMyID(s *Server, c *client, args [][]byte) {
	if v := s.clusterView(c); v != nil {
		c.conn.WriteBulkString(nodeID(v.Self))
	}
}

// cmdClusterKeySlot answers with or without a cluster: it is arithmetic.
func cmdClusterKeySlot(s *Server, c *client, args [][]byte) {
	c.conn.WriteInt(cluster.Slot(args[2]))
}

func cmdClusterInfo(s *Server, c *client, args [][]byte) {
	v := s.clusterView(c)
	if v == nil {
		return
	}
	var b strings.Builder
	for _, p := range append(clusterInfoPairs(v, s.cl.ho.Serving()), s.clusterMessages()...) {
		fmt.Fprintf(&b, "%s:%v\r\n", p.Key, p.Val)
	}
	c.conn.WriteBulkString(b.String())
}

func clusterInfoPairs(v *cluster.View, serving bool) []core.Pair {
	n := len(v.Table.Nodes())
	var current, mine uint64
	for i, e := range configEpochs(v) {
		current = max(current, e)
		if v.Members[i].Name == v.Self {
			mine = e
		}
	}
	state := "ok"
	if v.Waiting || !serving {
		state = "fail" // it serves no key until it meets a member, nor without a quorum (see server/internal/handoff, lease.go)
	}
	return []core.Pair{
		{Key: "cluster_state", Val: state}, {Key: "cluster_slots_assigned", Val: cluster.Slots}, {Key: "cluster_slots_ok", Val: cluster.Slots},
		{Key: "cluster_slots_pfail", Val: 0}, {Key: "cluster_slots_fail", Val: 0}, {Key: "cluster_known_nodes", Val: len(v.Members)},
		{Key: "cluster_size", Val: n}, {Key: "cluster_current_epoch", Val: current}, {Key: "cluster_my_epoch", Val: mine},
	}
}

func cmdClusterHelp(s *Server, c *client, args [][]byte) {
	writeHelp(c, clusterCommands()[0])
}

// cmdRLClusterNodes lists the members: name, address, gossip address,
// state and slots owned.
func cmdRLClusterNodes(s *Server, c *client, args [][]byte) {
	v := s.clusterView(c)
	if v == nil {
		return
	}
	counts := map[string]int{}
	for i, n := range v.Table.Count() {
		counts[v.Table.Nodes()[i].Name] = n
	}
	var rows []any
	for _, m := range v.Members {
		rows = append(rows, []core.Pair{{Key: "name", Val: m.Name}, {Key: "addr", Val: m.Addr}, {Key: "gossip", Val: m.Gossip},
			{Key: "state", Val: m.State.String()}, {Key: "slots", Val: counts[m.Name]}, {Key: "self", Val: boolInt(m.Name == v.Self)}})
	}
	core.WriteValue(&c.Session, rows)
}

// cmdRLClusterOwner is RL.CLUSTER OWNER key: its slot, owner and runner-up.
func cmdRLClusterOwner(s *Server, c *client, args [][]byte) {
	v := s.clusterView(c)
	if v == nil {
		return
	}
	slot := cluster.Slot(args[2])
	o := v.Table.Owner(slot)
	ps := []core.Pair{{Key: "slot", Val: slot}, {Key: "owner", Val: o.Name}, {Key: "addr", Val: o.Addr}}
	if ru, ok := v.Table.RunnerUp(slot); ok {
		ps = append(ps, core.Pair{Key: "runner_up", Val: ru.Name})
	}
	core.WriteMap(&c.Session, ps)
}

func cmdRLClusterInfo(s *Server, c *client, args [][]byte) {
	v := s.clusterView(c)
	if v == nil {
		return
	}
	core.WriteMap(&c.Session, s.rlClusterPairs(v))
}

func (s *Server) rlClusterPairs(v *cluster.View) []core.Pair {
	self, _ := v.Table.Node(v.Self)
	return append([]core.Pair{
		{Key: "node", Val: v.Self}, {Key: "addr", Val: self.Addr}, {Key: "epoch", Val: int64(v.Table.Epoch())},
		{Key: "members", Val: len(v.Members)}, {Key: "owners", Val: len(v.Table.Nodes())},
		{Key: "slots_owned", Val: len(rangesSlots(v.Table.Ranges(v.Self)))},
		{Key: "owner_unreachable", Val: s.cl.cfg.OwnerUnreachable.String()}, {Key: "redirect", Val: boolInt(s.cl.cfg.Redirect)},
		{Key: "forwarded", Val: s.cl.forwarded.Load()}, {Key: "owner_unreachable_replies", Val: s.cl.unreachable.Load()},
	}, append(s.cl.ho.QuorumPairs(), s.cl.ho.HandoffPairs()...)...)
}

func rangesSlots(rs []cluster.Range) []int {
	var out []int
	for _, r := range rs {
		for i := r.From; i <= r.To; i++ {
			out = append(out, i)
		}
	}
	return out
}

func cmdRLClusterHelp(s *Server, c *client, args [][]byte) {
	writeHelp(c, clusterCommands()[4])
}

// infoCluster is INFO's cluster section, as Redis has it, plus rlstore's view.
func (s *Server) infoCluster() []core.Pair {
	if s.cl == nil {
		return []core.Pair{{Key: "cluster_enabled", Val: 0}}
	}
	v := s.cl.view()
	ps := []core.Pair{{Key: "cluster_enabled", Val: 1}}
	for _, p := range s.rlClusterPairs(v) {
		ps = append(ps, core.Pair{Key: "rl_cluster_" + p.Key, Val: p.Val})
	}
	return ps
}

// clusterCommandDocs are COMMAND DOCS' entries for the cluster commands.
func clusterCommandDocs() map[string]cmdDoc {
	return map[string]cmdDoc{
		"cluster":       {since: "3.0.0", summary: "Redis Cluster's introspection, for cluster-aware clients"},
		"cluster|slots": {since: "3.0.0"}, "cluster|shards": {since: "7.0.0"}, "cluster|nodes": {since: "3.0.0"},
		"cluster|myid": {since: "3.0.0"}, "cluster|keyslot": {since: "3.0.0", args: []string{"key"}},
		"cluster|info": {since: "3.0.0"}, "cluster|help": {since: "5.0.0"},
		"cluster|countkeysinslot": {since: "3.0.0", args: []string{"slot:integer"}},
		"cluster|getkeysinslot":   {since: "3.0.0", args: []string{"slot:integer", "count:integer"}},
		"cluster|links":           {since: "7.0.0"}, "cluster|replicas": {since: "5.0.0", args: []string{"node-id"}},
		"cluster|slaves": {since: "3.0.0", args: []string{"node-id"}},
		"readonly":       {since: "3.0.0"}, "readwrite": {since: "3.0.0"}, "asking": {since: "3.0.0"},
		"rl.cluster": {since: rlSince, summary: "rlstore's view of its cluster"}, "rl.cluster|nodes": {since: rlSince},
		"rl.cluster|owner": {since: rlSince, args: []string{"key"}}, "rl.cluster|info": {since: rlSince},
		"rl.cluster|help": {since: rlSince}, "rl.cluster|forget": {since: rlSince, args: []string{"node"}},
		"rl.peer": {since: rlSince, args: []string{"HELLO|AUTH", "*arg"}},
		"rl.hop":  {since: rlSince, args: []string{"level:integer", "resp:integer", "command", "*arg"}},
	}
}

// cmdRLClusterForget is RL.CLUSTER FORGET node: the member will not come
// back, so the quorum stops counting it (see cluster.Known).
func cmdRLClusterForget(s *Server, c *client, args [][]byte) {
	if s.clusterView(c) == nil {
		return
	}
	if s.cl.cfg.Forget == nil {
		c.conn.WriteError("ERR this node keeps no known member set")
		return
	}
	switch err := s.cl.cfg.Forget(string(args[2])); {
	case errors.Is(err, cluster.ErrForgetSelf):
		c.conn.WriteError("ERR I tried hard but I can't forget myself...") // Redis's words
	case errors.Is(err, cluster.ErrUnknownNode):
		// Forgotten already, perhaps by another node's FORGET, which the
		// known set's gossip brought: the operator's word stands here too.
		s.cl.ho.ForgetLost()
		c.conn.WriteError("ERR Unknown node " + string(args[2]))
	case err != nil:
		c.conn.WriteError("ERR " + err.Error())
	default:
		s.cl.ho.ForgetLost()
		c.conn.WriteString("OK")
	}
}
