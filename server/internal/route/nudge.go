package route

import (
	"math/bits"
	"net"
	"strconv"
	"strings"
	"sync"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
)

// A cluster-aware client reads the slot map once and then sends each key
// to the owner it names. node-redis's createCluster reads it again only
// when a node answers -MOVED or -ASK, never on its own (node-redis#2806).
// After a node dies it keeps sending the dead node's slots to its address,
// where nothing answers, and a survivor never sees a key it does not own,
// so it cannot redirect them: they fail for as long as the client runs.
// So when the table changes, a node answers the first keyed command of
// each such connection with -MOVED to the key's owner under the new table,
// often itself: the client reloads its map, which names the new owners,
// and sends the command again. A leaving node does the same once its
// table no longer names it.
//
// Redis never answers MOVED to the node that owns the slot, and not every
// client takes one well, so only the libraries of nudgedLibs get it (as
// CLIENT SETINFO names them):
//   - node-redis has one connection per node for commands: each gets one.
//   - go-redis retries a MOVED at once on any connection of its pool, which
//     may be one that gets a MOVED of its own: with 48 goroutines, 3 of
//     60,000 requests failed after four. One reload serves the whole
//     ClusterClient, so only the first connection from each client host
//     gets it at each table (hostNudges): the retry then lands on one that
//     gets none. Without it go-redis found the new owners only at its next
//     ClusterStateReloadInterval (500 ms, docs/clients.md), under -race on
//     a loaded host 1.1 s after the survivors served. A second ClusterClient
//     on the same host reloads on that interval, as before.
//   - redis-py (4.3 to 5) marks the node it asked a replica of itself, and
//     once every node is so marked its next reload fails with an IndexError:
//     it gets none.
//
// And only to connections that route by slot: a plain client of the same
// library must never see -MOVED, as it does not follow it. A node cannot
// ask a connection which it is, so it judges by what it sent: one that
// sent keys of at least routedSlotBits distinct slot classes (slot mod
// 64) while other nodes owned slots too, all but a 1/routedRatio share of
// them keys this node owned, routes by slot. A plain client sends each
// node about 1/N of its keys as its own, so one is taken for routed only
// if its first 16 or more keys of different slots all fell here by
// chance: (1/N)^16, under 2·10^-5 at two nodes.

// routing is what one client connection's keyed commands said about it;
// only its goroutine touches it.
type routing struct {
	slots  uint64         // bit slot%64 of the local keys it sent
	local  uint32         // keyed commands run here
	remote uint32         // keyed commands forwarded
	table  *cluster.Table // the table of its last keyed command; nil: none yet
}

const (
	routedSlotBits = 16 // distinct slot classes of local keys before a connection counts as routed
	routedRatio    = 16 // and at most one forwarded keyed command per this many local ones
)

// routed reports whether the connection sends each key to its owner.
func (ro *routing) routed() bool {
	return bits.OnesCount64(ro.slots) >= routedSlotBits && uint64(ro.remote)*routedRatio <= uint64(ro.local)
}

// nudgedLibs are the CLIENT SETINFO library names (prefixes) whose
// cluster clients get a -MOVED after a table change, and whether one
// connection from each client host gets it (perHost) rather than each
// connection; see routing.
var nudgedLibs = [...]struct {
	prefix  string
	perHost bool
}{{"node-redis", false}, {"go-redis", true}}

// nudge returns the -MOVED that c's keyed command, routed as r, gets
// instead of running (see routing), or "". tries counts the times
// routeOne has routed the command already; only its first route counts.
func (rt *Router) nudge(x *core.Session, c *Conn, r route, tries int) string {
	if c.hop != hopClient || tries > 0 {
		return ""
	}
	v := rt.ho.Current()
	if v == nil || v.Waiting {
		return ""
	}
	ro := &c.routing
	if ro.changedTo(v, r.slot) {
		if lib := nudgedLib(x); lib >= 0 {
			moved := movedTo(v.Table, r)
			if moved != "" && (!nudgedLibs[lib].perHost || rt.hosts.first(hostOf(x.Addr), v.Table.Epoch())) {
				return moved
			}
		}
	}
	ro.note(v.Table, r)
	return ""
}

// hostNudges are the client hosts whose first routed connection got its
// nudge at the latest table epoch, for the libraries nudged per host.
type hostNudges struct {
	mu    sync.Mutex          // guards the fields below
	epoch uint64              // the table epoch hosts are of
	hosts map[string]struct{} // only this epoch's, so at most one entry per client host
}

// first reports whether host has had no nudge at epoch yet, and records
// that it has now. A connection that still holds an older table than
// another's nudge gets none.
func (h *hostNudges) first(host string, epoch uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case epoch < h.epoch:
		return false
	case epoch > h.epoch || h.hosts == nil:
		h.epoch, h.hosts = epoch, make(map[string]struct{})
	}
	if _, ok := h.hosts[host]; ok {
		return false
	}
	h.hosts[host] = struct{}{}
	return true
}

// hostOf is the host of a client's address host:port.
func hostOf(addr string) string {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}

// changedTo records v's table as the connection's latest, and reports
// whether the table changed since its last keyed command and the
// connection routes by slot: its command, on slot, then gets a nudge. A
// table that still names a member declared dead (namesTheDead) is not
// recorded, so the nudge waits for the next.
//
// A command on a slot the change gave this node gets none: the client
// has the new map already, as its old one named another owner. go-redis
// sends a dead node's key there only once a reload found the new owner,
// and perhaps on its last try after the dead address refused three: a
// MOVED then would be the error the application sees.
func (ro *routing) changedTo(v *cluster.View, slot int) bool {
	t := v.Table
	if ro.table != nil && ro.table.Epoch() == t.Epoch() || namesTheDead(v) {
		return false
	}
	seen := ro.table
	ro.table = t
	gained := seen != nil && seen.Owner(slot).Name != v.Self && t.Owner(slot).Name == v.Self
	return seen != nil && !gained && ro.routed()
}

// namesTheDead reports whether v's table still deals slots to a member
// declared dead whose death no majority has confirmed yet (a table node
// that is not a member), which CLUSTER SLOTS then names. A nudge waits
// until the table no longer does: node-redis's reload connects to every
// node the map names and, its reconnect strategy retrying for good, waits
// on a dead one forever, and every command that gets a -MOVED or -ASK
// after waits on that reload too (node-redis 5.9: a kill -9 test's client
// that never recovered). The confirmation's table drops the member, and
// the connection's next keyed command gets its nudge then.
func namesTheDead(v *cluster.View) bool {
	for _, n := range v.Table.Nodes() {
		if _, ok := v.Member(n.Name); !ok {
			return true
		}
	}
	return false
}

// note counts one keyed command routed as r under table t.
func (ro *routing) note(t *cluster.Table, r route) {
	if len(t.Nodes()) < 2 {
		return // a node that owns every slot learns nothing from a key
	}
	switch {
	case r.local:
		ro.slots |= 1 << (r.slot & 63)
		ro.local++
	case r.owner.Name != "":
		ro.remote++
	}
	if ro.local >= 1<<31 || ro.remote >= 1<<31 {
		ro.local, ro.remote = ro.local/2, ro.remote/2
	}
}

// nudgedLib returns the index in nudgedLibs of x's library (CLIENT
// SETINFO LIB-NAME), or -1.
func nudgedLib(x *core.Session) int {
	lib := strings.ToLower(x.Meta().LibName)
	for i, l := range nudgedLibs {
		if strings.HasPrefix(lib, l.prefix) {
			return i
		}
	}
	return -1
}

// movedTo is the -MOVED for r's slot to its owner in t, or "" for a
// command that is not routed to one owner (a gated slot, an error).
func movedTo(t *cluster.Table, r route) string {
	if r.reply != "" || r.gate != nil {
		return ""
	}
	owner := t.Owner(r.slot)
	if owner.Addr == "" {
		return ""
	}
	return "MOVED " + strconv.Itoa(r.slot) + " " + owner.Addr
}
