package route

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
func (rt *Router) clusterCommands() []core.Command {
	return []core.Command{
		{Name: "cluster", Arity: -2, Group: "cluster", Subs: append([]core.Command{
			{Name: "slots", Arity: 2, Run: rt.cmdClusterSlots, Summary: "Lists slot ranges and their owners"},
			{Name: "shards", Arity: 2, Run: rt.cmdClusterShards, Summary: "Lists each node's slot ranges"},
			{Name: "nodes", Arity: 2, Run: rt.cmdClusterNodes, Summary: "Lists the nodes in Redis Cluster's text format"},
			{Name: "myid", Arity: 2, Run: rt.cmdClusterMyID, Summary: "Returns this node's ID"},
			{Name: "keyslot", Arity: 3, Run: cmdClusterKeySlot, Summary: "Returns a key's hash slot"},
			{Name: "info", Arity: 2, Run: rt.cmdClusterInfo, Summary: "Returns the cluster's state"},
			{Name: "help", Arity: 2, Run: rt.cmdClusterHelp, Summary: "Lists CLUSTER's subcommands"},
		}, rt.clusterToolCommands()...)},
		{Name: "readonly", Arity: 1, Run: cmdOK, Group: "cluster", Summary: "Accepted for cluster clients; changes nothing"},
		{Name: "readwrite", Arity: 1, Run: cmdOK, Group: "cluster", Summary: "Accepted for cluster clients; changes nothing"},
		{Name: "asking", Arity: 1, Run: cmdOK, Group: "cluster", Summary: "Accepted for cluster clients; changes nothing"},
		{Name: "rl.cluster", Arity: -2, Group: "cluster", Subs: []core.Command{
			{Name: "nodes", Arity: 2, Run: rt.cmdRLClusterNodes, Summary: "Lists the members, their state and slot counts"},
			{Name: "owner", Arity: 3, Run: rt.cmdRLClusterOwner, Summary: "Names a key's slot, owner and runner-up"},
			{Name: "info", Arity: 2, Run: rt.cmdRLClusterInfo, Summary: "Shows this node's view of the cluster"},
			{Name: "forget", Arity: 3, Run: rt.cmdRLClusterForget, Summary: "Removes a dead member from the known member set for good"},
			rt.setSlotCommand(),
			{Name: "help", Arity: 2, Run: rt.cmdRLClusterHelp, Summary: "Lists RL.CLUSTER's subcommands"},
		}},
	}
}

func cmdOK(x *core.Session, _ [][]byte) { x.Out.WriteString("OK") }

// clusterView returns the view, or writes Redis's error for a server
// without a cluster and returns nil.
func (rt *Router) clusterView(x *core.Session) *cluster.View {
	if !rt.on {
		x.Out.WriteError(errNoCluster)
		return nil
	}
	return rt.ho.View()
}

// NodeID is a node's 40-hex-digit ID, as Redis Cluster's look: clients
// parse it. It is derived from the name, so it is the same on every node.
func NodeID(name string) string {
	h := sha1.Sum([]byte(name))
	return hex.EncodeToString(h[:])
}

// SplitAddr is addr's host and port, as CLUSTER's replies and INFO's backups give them.
func SplitAddr(addr string) (string, int) {
	h, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	return h, port
}

// cmdClusterSlots is CLUSTER SLOTS, encoded once per view.
func (rt *Router) cmdClusterSlots(x *core.Session, args [][]byte) {
	if v := rt.clusterView(x); v != nil {
		x.Out.WriteRaw(rt.topologyOf(v).slots[respIndex(x)])
	}
}

// cmdClusterShards is CLUSTER SHARDS: one shard per node, with its ranges.
func (rt *Router) cmdClusterShards(x *core.Session, args [][]byte) {
	if v := rt.clusterView(x); v != nil {
		x.Out.WriteRaw(rt.topologyOf(v).shards[respIndex(x)])
	}
}

// cmdClusterNodes is CLUSTER NODES, in Redis Cluster's line format.
func (rt *Router) cmdClusterNodes(x *core.Session, args [][]byte) {
	if v := rt.clusterView(x); v != nil {
		x.Out.WriteBulk(rt.nodesOf(v).text)
	}
}

func (rt *Router) cmdClusterMyID(x *core.Session, args [][]byte) {
	if v := rt.clusterView(x); v != nil {
		x.Out.WriteBulkString(NodeID(v.Self))
	}
}

// cmdClusterKeySlot answers with or without a cluster: it is arithmetic.
func cmdClusterKeySlot(x *core.Session, args [][]byte) {
	x.Out.WriteInt(cluster.Slot(args[2]))
}

func (rt *Router) cmdClusterInfo(x *core.Session, args [][]byte) {
	v := rt.clusterView(x)
	if v == nil {
		return
	}
	var b strings.Builder
	for _, p := range append(rt.clusterInfoPairs(v), rt.clusterMessages()...) {
		fmt.Fprintf(&b, "%s:%v\r\n", p.Key, p.Val)
	}
	x.Out.WriteBulkString(b.String())
}

func (rt *Router) cmdClusterHelp(x *core.Session, args [][]byte) {
	core.WriteHelp(x, &rt.clusterCommands()[0])
}

// cmdRLClusterNodes lists the members: name, address, gossip address,
// state and slots owned.
func (rt *Router) cmdRLClusterNodes(x *core.Session, args [][]byte) {
	v := rt.clusterView(x)
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
	core.WriteValue(x, rows)
}

// cmdRLClusterOwner is RL.CLUSTER OWNER key: its slot, owner and runner-up.
func (rt *Router) cmdRLClusterOwner(x *core.Session, args [][]byte) {
	v := rt.clusterView(x)
	if v == nil {
		return
	}
	slot := cluster.Slot(args[2])
	o := v.Table.Owner(slot)
	ps := []core.Pair{{Key: "slot", Val: slot}, {Key: "owner", Val: o.Name}, {Key: "addr", Val: o.Addr}}
	if ru, ok := v.Table.RunnerUp(slot); ok {
		ps = append(ps, core.Pair{Key: "runner_up", Val: ru.Name})
	}
	core.WriteMap(x, ps)
}

func (rt *Router) cmdRLClusterInfo(x *core.Session, args [][]byte) {
	v := rt.clusterView(x)
	if v == nil {
		return
	}
	core.WriteMap(x, rt.rlClusterPairs(v))
}

func (rt *Router) rlClusterPairs(v *cluster.View) []core.Pair {
	self, _ := v.Table.Node(v.Self)
	return append([]core.Pair{
		{Key: "node", Val: v.Self}, {Key: "addr", Val: self.Addr}, {Key: "epoch", Val: int64(v.Table.Epoch())},
		{Key: "members", Val: len(v.Members)}, {Key: "owners", Val: len(v.Table.Nodes())},
		{Key: "slots_owned", Val: SlotsOwned(v)},
		{Key: "owner_unreachable", Val: rt.cfg.OwnerUnreachable.String()}, {Key: "redirect", Val: boolInt(rt.cfg.Redirect)},
		{Key: "forwarded", Val: rt.forwarded.Load()}, {Key: "owner_unreachable_replies", Val: rt.unreached.Load()},
	}, append(rt.ho.QuorumPairs(), rt.ho.HandoffPairs()...)...)
}

// SlotsOwned is how many slots this node owns in v.
func SlotsOwned(v *cluster.View) int {
	n := 0
	for _, r := range v.Table.Ranges(v.Self) {
		n += r.To - r.From + 1
	}
	return n
}

// Stats are the router's counters, for /metrics.
type Stats struct {
	Forwarded   int64 // commands sent to their owners
	Unreachable int64 // commands answered by --owner-unreachable
}

// Stats returns the router's counters.
func (rt *Router) Stats() Stats {
	return Stats{Forwarded: rt.forwarded.Load(), Unreachable: rt.unreached.Load()}
}

// EachPeer calls f with what this node forwarded to each node it ever
// forwarded to, and the forwards that failed.
func (rt *Router) EachPeer(f func(name string, forwarded, errors int64)) {
	rt.peers.Range(func(name, v any) bool {
		ps := v.(*peerStats)
		f(name.(string), ps.forwarded.Load(), ps.errors.Load())
		return true
	})
}

func (rt *Router) cmdRLClusterHelp(x *core.Session, args [][]byte) {
	core.WriteHelp(x, &rt.clusterCommands()[4])
}

// InfoPairs is INFO's cluster section, as Redis has it, plus rlstore's view.
func (rt *Router) InfoPairs() []core.Pair {
	if !rt.on {
		return []core.Pair{{Key: "cluster_enabled", Val: 0}}
	}
	v := rt.ho.View()
	ps := []core.Pair{{Key: "cluster_enabled", Val: 1}}
	for _, p := range rt.rlClusterPairs(v) {
		ps = append(ps, core.Pair{Key: "rl_cluster_" + p.Key, Val: p.Val})
	}
	return ps
}

// Doc is a command's COMMAND DOCS entry, as introspect.Doc has it.
type Doc struct {
	Since   string
	Summary string
	Args    []string // argument specs, see introspect.Docs
}

// Docs are COMMAND DOCS' entries for the cluster commands; rlSince is the
// rlstore version that has every RL command as documented.
func Docs(rlSince string) map[string]Doc {
	return map[string]Doc{
		"cluster":       {Since: "3.0.0", Summary: "Redis Cluster's introspection, for cluster-aware clients"},
		"cluster|slots": {Since: "3.0.0"}, "cluster|shards": {Since: "7.0.0"}, "cluster|nodes": {Since: "3.0.0"},
		"cluster|myid": {Since: "3.0.0"}, "cluster|keyslot": {Since: "3.0.0", Args: []string{"key"}},
		"cluster|info": {Since: "3.0.0"}, "cluster|help": {Since: "5.0.0"},
		"cluster|countkeysinslot": {Since: "3.0.0", Args: []string{"slot:integer"}},
		"cluster|getkeysinslot":   {Since: "3.0.0", Args: []string{"slot:integer", "count:integer"}},
		"cluster|links":           {Since: "7.0.0"}, "cluster|replicas": {Since: "5.0.0", Args: []string{"node-id"}},
		"cluster|slaves": {Since: "3.0.0", Args: []string{"node-id"}},
		"readonly":       {Since: "3.0.0"}, "readwrite": {Since: "3.0.0"}, "asking": {Since: "3.0.0"},
		"rl.cluster": {Since: rlSince, Summary: "rlstore's view of its cluster"}, "rl.cluster|nodes": {Since: rlSince},
		"rl.cluster|owner": {Since: rlSince, Args: []string{"key"}}, "rl.cluster|info": {Since: rlSince},
		"rl.cluster|help": {Since: rlSince}, "rl.cluster|forget": {Since: rlSince, Args: []string{"node"}},
		"rl.cluster|setslot": {Since: rlSince, Args: []string{"slot", "STABLE"}},
		"rl.peer":            {Since: rlSince, Args: []string{"HELLO|AUTH", "*arg"}},
		"rl.hop":             {Since: rlSince, Args: []string{"level:integer", "resp:integer", "command", "*arg"}},
	}
}

// cmdRLClusterForget is RL.CLUSTER FORGET node: the member will not come
// back, so the quorum stops counting it (see cluster.Known).
func (rt *Router) cmdRLClusterForget(x *core.Session, args [][]byte) {
	if rt.clusterView(x) == nil {
		return
	}
	if rt.cfg.Forget == nil {
		x.Out.WriteError("ERR this node keeps no known member set")
		return
	}
	switch err := rt.cfg.Forget(string(args[2])); {
	case errors.Is(err, cluster.ErrForgetSelf):
		x.Out.WriteError("ERR I tried hard but I can't forget myself...") // Redis's words
	case errors.Is(err, cluster.ErrUnknownNode):
		// Forgotten already, perhaps by another node's FORGET, which the
		// known set's gossip brought: the operator's word stands here too.
		rt.ho.ForgetLost()
		x.Out.WriteError("ERR Unknown node " + string(args[2]))
	case err != nil:
		x.Out.WriteError("ERR " + err.Error())
	default:
		rt.ho.ForgetLost()
		x.Out.WriteString("OK")
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
