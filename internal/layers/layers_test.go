package layers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/rlstore/rlstore"

// rule says which of our packages a package (matched by path prefix) may
// depend on, directly or not. Prefixes are module-relative; "" is the root.
type rule struct {
	pkg     string
	allowed []string // prefixes it may import; nil with denied set means "all but denied"
	denied  []string
	// deniedExact are packages it may not import, though their
	// subpackages may be allowed.
	deniedExact []string
}

// rules is the dependency table of the house style: window <- shard, policy
// <- persistence <- server <- cmd; cluster imports nothing of ours above it;
// loadtest measures the server from outside, so it imports none of it.
// The first rule whose prefix matches a package applies; a package no rule
// names gets defaultRule, and the test logs it so the table can be extended.
var rules = []rule{
	{pkg: "window", allowed: []string{"window"}},
	{pkg: "shard", allowed: []string{"shard", "window"}},
	{pkg: "policy", allowed: []string{"policy", "window"}},
	{pkg: "region", allowed: []string{"region", "window"}}, // the cross-region escrow model: pure, like window
	{pkg: "persistence", allowed: []string{"persistence", "shard", "window", "policy"}},
	{pkg: "cluster", denied: []string{"server", "cmd", "loadtest"}},
	{pkg: "loadtest", allowed: []string{"loadtest", "internal"}},
	{pkg: "client", allowed: []string{"client"}},                                   // users' client library: speaks RESP like any client
	{pkg: "integrations", allowed: []string{"integrations", "client", "internal"}}, // other languages' clients, from outside
	{pkg: "gateway/batch", allowed: []string{"gateway/batch"}},                     // the seam's types: the server implements it, the gateway asks it
	{pkg: "gateway", allowed: []string{"gateway"}},                                 // Envoy's rate limit service: decides only through gateway/batch
	// server/ is a thin front over packages of one concern each under
	// server/internal (see docs/internals.md); each row lists what its
	// package may import, directly or through another. The transport knows
	// no command; core (the table, session and pipeline) knows no family;
	// the families know core but not each other; the cluster stack is
	// replica < handoff < route. glob (Redis's glob patterns) is a leaf that
	// the families that match keys share, as they may not import each other.
	{pkg: "server/internal/resp", allowed: []string{"server/internal/resp", "internal/wire"}},
	{pkg: "server/internal/glob", allowed: []string{"server/internal/glob"}},
	{pkg: "server/internal/core", allowed: []string{"server/internal/core", "server/internal/resp", "internal/wire", "policy", "window"}},
	{pkg: "server/internal/decide", allowed: []string{"server/internal/decide", "server/internal/core", "server/internal/resp", "internal/wire", "shard", "window", "policy", "persistence"}},
	{pkg: "server/internal/keyspace", allowed: []string{"server/internal/keyspace", "server/internal/core", "server/internal/resp", "internal/wire", "server/internal/glob", "shard", "policy", "window"}},
	{pkg: "server/internal/auth", allowed: []string{"server/internal/auth", "server/internal/core", "server/internal/resp", "internal/wire", "server/internal/glob", "shard", "window", "policy"}},
	{pkg: "server/internal/observe", allowed: []string{"server/internal/observe", "server/internal/core", "server/internal/resp", "internal/wire", "policy", "window"}},
	{pkg: "server/internal/durable", allowed: []string{"server/internal/durable", "server/internal/core", "server/internal/resp", "internal/wire", "shard", "persistence", "policy", "window"}},
	{pkg: "server/internal/introspect", allowed: []string{"server/internal/introspect", "server/internal/core", "server/internal/resp", "internal/wire", "policy", "window"}}, // COMMAND: it reads the table, never a family
	{pkg: "server/internal/clientcmd", allowed: []string{"server/internal/clientcmd", "server/internal/core", "server/internal/resp", "internal/wire", "policy", "window"}},   // CLIENT: the connections are core.Registry's sessions
	{pkg: "server/internal/debugcmd", allowed: []string{"server/internal/debugcmd", "server/internal/core", "server/internal/resp", "internal/wire", "policy", "window"}},     // DEBUG and its clock: a client's address is its session's
	{pkg: "server/internal/multi", allowed: []string{"server/internal/multi", "server/internal/core", "server/internal/resp", "internal/wire", "policy", "window"}},           // MULTI, EXEC, DISCARD, WATCH: a queue runs through multi.Delegate, never a family
	{pkg: "server/internal/proc", allowed: []string{"server/internal/proc"}},                                                                                                  // what the OS says of the process (getrusage, getrlimit): a leaf, for INFO and maxclients
	{pkg: "server/internal/inproc", allowed: []string{"server/internal/inproc", "gateway/batch"}},                                                                             // the gateway's in-memory client: it speaks RESP to the server, knowing none of it
	{pkg: "server/internal/replica", allowed: clusterStack("replica")},
	{pkg: "server/internal/handoff", allowed: clusterStack("handoff", "replica")},
	{pkg: "server/internal/route", allowed: clusterStack("route", "handoff", "replica")},
	// global decides the keys shared across regions and syncs them: the
	// region model's runtime in a node. It knows the key store, policies
	// and the peers' transport, and no family (the decision family asks it).
	{pkg: "server/internal/global", allowed: []string{"server/internal/global", "server/internal/glob", "region", "cluster", "internal/wire", "shard", "policy", "window"}},
	{pkg: "server", denied: []string{"cmd", "loadtest", "gateway/rlsconfig"}, deniedExact: []string{"gateway"}}, // it implements gateway/batch, and knows nothing else of the gateway
	// wire is the RESP codec that the server's transport and the cluster's
	// peers share (a module-level internal package, which cluster may
	// import, where server/internal is closed to it); it knows no command.
	{pkg: "internal/wire", allowed: []string{"internal/wire"}},
	{pkg: "internal/wiretest", allowed: []string{"internal/wiretest"}},
	{pkg: "internal", denied: []string{"cmd", "loadtest"}},
	{pkg: "cmd", denied: []string{"loadtest"}},
}

// clusterStack is what a package of the cluster stack may import: the
// packages of ours the cluster code needs, and those of the stack below it.
func clusterStack(stack ...string) []string {
	allowed := []string{"server/internal/core", "server/internal/resp", "internal/wire", "shard", "persistence", "cluster", "policy", "window"}
	for _, p := range stack {
		allowed = append(allowed, "server/internal/"+p)
	}
	return allowed
}

// TestLayering checks every package of the module against rules, over the
// dependency lists `go list -deps` reports (test files excluded), so an
// import through a third package counts too.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...").Output()
	require.NoError(t, err, "go list: %s", stderrOf(err))
	require.NotEmpty(t, strings.TrimSpace(string(out)))
	for _, v := range violations(string(out), t.Logf) {
		t.Error(v)
	}
}

// violations returns the dependencies that out, lines of a package and the
// packages it depends on as `go list -deps` prints them, has against rules.
func violations(out string, logf func(string, ...any)) []string {
	var found []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		fields := strings.Fields(line)
		pkg := ours(fields[0])
		r, ok := ruleFor(pkg)
		if !ok {
			logf("package %s has no layering rule of its own; add it to rules", pkg)
			r = defaultRule
		}
		for _, dep := range fields[1:] {
			if d, mine := strings.CutPrefix(dep, module+"/"); mine && !r.permits(d) {
				found = append(found, pkg+" depends on "+d+", which its layer may not import")
			}
		}
	}
	return found
}

// TestLayeringCatchesAViolation feeds the check what `go list -deps` would
// print for a server/internal package that imports what its row forbids,
// directly or through another of ours, and for one that keeps to its row.
func TestLayeringCatchesAViolation(t *testing.T) {
	m := module + "/"
	bad := []string{
		m + "server/internal/resp " + m + "server/internal/core",                                     // the transport naming the table
		m + "server/internal/resp strings " + m + "window",                                           // nothing of ours at all
		m + "server/internal/keyspace " + m + "server/internal/decide",                               // one family importing another
		m + "server/internal/replica " + m + "server/internal/route",                                 // the stack upside down
		m + "server/internal/core " + m + "server/internal/core " + m + "persistence " + m + "shard", // through persistence
		m + "server/internal/core " + m + "server/internal/observe",                                  // the table importing what observes it: a cycle
		m + "internal/wire " + m + "server/internal/resp",                                            // the codec knowing the transport
		m + "server/internal/global " + m + "server/internal/decide",                                 // the regions asking the family that asks them
		m + "server/internal/global " + m + "persistence",                                            // the regions writing the log themselves
	}
	got := violations(strings.Join(bad, "\n"), t.Logf)
	assert.Equal(t, []string{
		"server/internal/resp depends on server/internal/core, which its layer may not import",
		"server/internal/resp depends on window, which its layer may not import",
		"server/internal/keyspace depends on server/internal/decide, which its layer may not import",
		"server/internal/replica depends on server/internal/route, which its layer may not import",
		"server/internal/core depends on persistence, which its layer may not import",
		"server/internal/core depends on shard, which its layer may not import",
		"server/internal/core depends on server/internal/observe, which its layer may not import",
		"internal/wire depends on server/internal/resp, which its layer may not import",
		"server/internal/global depends on server/internal/decide, which its layer may not import",
		"server/internal/global depends on persistence, which its layer may not import",
	}, got)
	good := m + "server/internal/route " + m + "server/internal/handoff " + m + "server/internal/replica " + m + "cluster " + m + "server/internal/resp " + m + "internal/wire"
	assert.Empty(t, violations(good, t.Logf))
}

// TestRulesCatchAViolation keeps the checker honest: a rule must refuse what
// the table forbids and permit what it allows.
func TestRulesCatchAViolation(t *testing.T) {
	cases := []struct {
		pkg, dep string
		want     bool
	}{
		{"window", "shard", false},
		{"shard", "window", true},
		{"shard", "persistence", false},
		{"policy", "shard", false},
		{"persistence", "policy", true},
		{"persistence", "server", false},
		{"cluster", "server", false},
		{"cluster/ring", "window", true},
		{"loadtest", "server", false},
		{"loadtest/internal/hist", "internal/procs", true},
		{"loadtest/cmd/rlload", "loadtest/internal/hist", true},
		{"server", "cmd/rlstore", false},
		{"cmd/rlstore", "server", true},
		{"windowx", "window", false}, // prefixes match whole path elements
		{"client/httplimit", "client", true},
		{"client", "server", false},
		{"server", "gateway/batch", true},
		{"server", "gateway", false},
		{"server", "gateway/rlsconfig", false},
		{"gateway", "server", false},
		{"gateway/batch", "gateway", false},
		{"server/internal/resp", "server/internal/resp", true},
		{"server/internal/resp", "server/internal/core", false},
		{"server/internal/resp", "window", false},
		{"server/internal/core", "server/internal/resp", true},
		{"server/internal/core", "policy", true},
		{"server/internal/core", "shard", false},
		{"server/internal/core", "server/internal/decide", false},
		{"server/internal/core", "server/internal/observe", false}, // observe sees commands through core: the counters are the entry's (core.Stats)
		{"server/internal/core", "server/internal/auth", false},    // the ACL reaches the pipeline as a Permitter
		{"server/internal/core", "server/internal/glob", false},
		{"server/internal/core", "server", false},
		{"server/internal/decide", "persistence", true},
		{"server/internal/decide", "server/internal/keyspace", false},
		{"server/internal/decide", "server/internal/global", false}, // the regions are asked through decide.Regions
		{"server/internal/decide", "server/internal/resp", true},    // the batch's prefetch parses ahead in the connection
		{"server/internal/keyspace", "shard", true},
		{"server/internal/keyspace", "persistence", false},
		{"server/internal/auth", "shard", true},
		{"server/internal/auth", "persistence", false},
		{"server/internal/auth", "server/internal/glob", true},
		{"server/internal/keyspace", "server/internal/glob", true},
		{"server/internal/glob", "window", false},
		{"server/internal/glob", "server/internal/resp", false},
		{"server/internal/observe", "server/internal/glob", false},
		{"server/internal/observe", "server/internal/core", true},
		{"server/internal/observe", "shard", false},
		{"server/internal/durable", "persistence", true},
		{"server/internal/durable", "cluster", false},
		{"server/internal/replica", "cluster", true},
		{"server/internal/replica", "server/internal/handoff", false},
		{"server/internal/replica", "server", false}, // the replicator asks its node through replica.Delegate
		{"server/internal/replica", "server/internal/keyspace", false},
		{"server/internal/replica", "persistence", true},
		{"server/internal/replica", "server/internal/resp", true},
		{"server/internal/handoff", "server/internal/replica", true},
		{"server/internal/handoff", "server/internal/route", false},
		{"server/internal/route", "server/internal/handoff", true},
		{"server/internal/route", "server", false},
		{"server", "server/internal/route", true},
		{"internal/wire", "window", false},
		{"internal/wire", "server/internal/resp", false},
		{"internal/wire", "cluster", false},
		{"server/internal/resp", "internal/wire", true},
		{"cluster", "internal/wire", true},
		{"server/internal/route", "internal/wire", true},
		{"server/internal/introspect", "server/internal/core", true},
		{"server/internal/introspect", "server/internal/keyspace", false},
		{"server/internal/introspect", "shard", false},
		{"server/internal/clientcmd", "server/internal/core", true},
		{"server/internal/clientcmd", "server/internal/observe", false}, // tracking's part of a client's line comes through clientcmd.Delegate
		{"server/internal/clientcmd", "shard", false},
		{"server/internal/debugcmd", "server/internal/core", true},
		{"server/internal/debugcmd", "shard", false},
		{"server/internal/inproc", "gateway/batch", true},
		{"server/internal/inproc", "server/internal/resp", false},
		{"server/internal/inproc", "server/internal/core", false},
		{"server/internal/inproc", "gateway", false},
	}
	for _, c := range cases {
		r, ok := ruleFor(c.pkg)
		got := ok && r.permits(c.dep)
		assert.Equal(t, c.want, got, "%s importing %s", c.pkg, c.dep)
	}
}

// ours strips the module path from an import path.
func ours(path string) string {
	if path == module {
		return ""
	}
	return strings.TrimPrefix(path, module+"/")
}

// defaultRule is for packages the table does not name yet: nothing may
// depend on the binaries or the load generator.
var defaultRule = rule{denied: []string{"cmd", "loadtest"}}

func ruleFor(pkg string) (rule, bool) {
	for _, r := range rules {
		if under(pkg, r.pkg) {
			return r, true
		}
	}
	return rule{}, false
}

func (r rule) permits(dep string) bool {
	for _, p := range r.deniedExact {
		if dep == p {
			return false
		}
	}
	if r.allowed != nil {
		return anyUnder(dep, r.allowed)
	}
	return !anyUnder(dep, r.denied)
}

func anyUnder(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if under(pkg, p) {
			return true
		}
	}
	return false
}

// under reports whether pkg is prefix or a package inside it.
func under(pkg, prefix string) bool {
	return pkg == prefix || strings.HasPrefix(pkg, prefix+"/")
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestReplicaRowCatchesAViolation: the replicas' package keeps to its row
// with the dependencies it has, and the row refuses the server front (the
// replicator once held a *Server; it asks replica.Delegate now), a
// command family, and the stack above it, directly or through another.
func TestReplicaRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/replica " + m + "internal/wire " + m + "cluster " + m + "persistence/vfs " + m + "window " +
		m + "policy " + m + "shard " + m + "persistence " + m + "server/internal/resp"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/replica " + m + "server/internal/keyspace",
		m + "server/internal/replica " + m + "server/internal/handoff " + m + "server/internal/route",
	}
	assert.Equal(t, []string{
		"server/internal/replica depends on server, which its layer may not import",
		"server/internal/replica depends on server/internal/keyspace, which its layer may not import",
		"server/internal/replica depends on server/internal/handoff, which its layer may not import",
		"server/internal/replica depends on server/internal/route, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestHandoffRowCatchesAViolation: the handoff's package keeps to its row
// with the dependencies it has (the replicator below it, core for a peer's
// request), and the row refuses the server front (its files were methods
// of *Server; it takes handoff.Config now), the router above it (which
// asks the handoff, never the other way), a command family and the
// regions, directly or through another.
func TestHandoffRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/handoff " + m + "cluster " + m + "internal/wire " + m + "persistence " + m + "persistence/vfs " +
		m + "policy " + m + "server/internal/core " + m + "server/internal/replica " + m + "server/internal/resp " + m + "shard " + m + "window"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/handoff " + m + "server/internal/route",
		m + "server/internal/handoff " + m + "server/internal/replica " + m + "server/internal/decide",
		m + "server/internal/handoff " + m + "server/internal/global",
	}
	assert.Equal(t, []string{
		"server/internal/handoff depends on server, which its layer may not import",
		"server/internal/handoff depends on server/internal/route, which its layer may not import",
		"server/internal/handoff depends on server/internal/decide, which its layer may not import",
		"server/internal/handoff depends on server/internal/global, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestRouteRowCatchesAViolation: the router's package, the top of the
// cluster stack, keeps to its row with the dependencies it has (the
// handoff and the replicator below it, core for the table and the
// sessions), and the row refuses the server front (its files were methods
// of *Server; it takes route.Config and small delegates now), a command
// family (the handshake's guard and login are auth's, through route.Gate),
// the regions (through route.Regions) and what is above the server.
func TestRouteRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/route " + m + "cluster " + m + "internal/wire " + m + "persistence " + m + "persistence/vfs " +
		m + "policy " + m + "server/internal/core " + m + "server/internal/handoff " + m + "server/internal/replica " +
		m + "server/internal/resp " + m + "shard " + m + "window"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/route " + m + "server/internal/auth",
		m + "server/internal/route " + m + "server/internal/handoff " + m + "server/internal/decide",
		m + "server/internal/route " + m + "server/internal/global",
		m + "server/internal/route " + m + "cmd/rlstore",
	}
	assert.Equal(t, []string{
		"server/internal/route depends on server, which its layer may not import",
		"server/internal/route depends on server/internal/auth, which its layer may not import",
		"server/internal/route depends on server/internal/decide, which its layer may not import",
		"server/internal/route depends on server/internal/global, which its layer may not import",
		"server/internal/route depends on cmd/rlstore, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestDurableRowCatchesAViolation: the write path's package keeps to its
// row with the dependencies it has, and the row refuses the server front
// (it reaches its connection through durable.Batch and a call func), the
// cluster, and another family, directly or through another.
func TestDurableRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/durable " + m + "internal/wire " + m + "persistence/vfs " + m + "window " +
		m + "policy " + m + "shard " + m + "persistence " + m + "server/internal/resp " + m + "server/internal/core"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/durable " + m + "cluster",
		m + "server/internal/durable " + m + "server/internal/observe",
	}
	assert.Equal(t, []string{
		"server/internal/durable depends on server, which its layer may not import",
		"server/internal/durable depends on cluster, which its layer may not import",
		"server/internal/durable depends on server/internal/observe, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestObserveRowCatchesAViolation: tracking and MONITOR keep to observe's
// row with the dependencies they have (the store is read through
// observe.Delegate, never imported), and the row refuses the front, the
// store and another family, directly or through another.
func TestObserveRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/observe " + m + "internal/wire " + m + "window " + m + "policy " +
		m + "server/internal/resp " + m + "server/internal/core"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/observe " + m + "shard",
		m + "server/internal/observe " + m + "server/internal/durable " + m + "persistence",
	}
	assert.Equal(t, []string{
		"server/internal/observe depends on server, which its layer may not import",
		"server/internal/observe depends on shard, which its layer may not import",
		"server/internal/observe depends on server/internal/durable, which its layer may not import",
		"server/internal/observe depends on persistence, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestAuthRowCatchesAViolation: AUTH, HELLO and the users keep to auth's
// row with the dependencies they have (the connection is closed and named
// through auth.Front, the secret attributes are core's), and the row
// refuses the front, observe (where the secret attributes once were) and
// persistence, directly or through another.
func TestAuthRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/auth " + m + "internal/wire " + m + "window " + m + "policy " +
		m + "server/internal/resp " + m + "server/internal/core " + m + "server/internal/glob"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/auth " + m + "server/internal/observe",
		m + "server/internal/auth " + m + "server/internal/durable " + m + "persistence",
	}
	assert.Equal(t, []string{
		"server/internal/auth depends on server, which its layer may not import",
		"server/internal/auth depends on server/internal/observe, which its layer may not import",
		"server/internal/auth depends on server/internal/durable, which its layer may not import",
		"server/internal/auth depends on persistence, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestDecideRowCatchesAViolation: the decisions' package keeps to its row
// with the dependencies it has (the store, the policies and their durable
// store; the server is reached through decide.Front, tracking through
// decide.Tracker, the regions through decide.Regions), and the row refuses the front, another
// family, the regions' model (a global key is the front's to refuse) and
// the cluster stack, directly or through another.
func TestDecideRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/decide " + m + "internal/wire " + m + "window " + m + "policy " + m + "shard " +
		m + "server/internal/resp " + m + "server/internal/core " + m + "persistence"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/decide " + m + "server/internal/observe",
		m + "server/internal/decide " + m + "server/internal/durable",
		m + "server/internal/decide " + m + "region",
		m + "server/internal/decide " + m + "server/internal/global", // the seam asks the regions through decide.Regions; they may not be asked back
		m + "server/internal/decide " + m + "server/internal/route " + m + "cluster",
	}
	assert.Equal(t, []string{
		"server/internal/decide depends on server, which its layer may not import",
		"server/internal/decide depends on server/internal/observe, which its layer may not import",
		"server/internal/decide depends on server/internal/durable, which its layer may not import",
		"server/internal/decide depends on region, which its layer may not import",
		"server/internal/decide depends on server/internal/global, which its layer may not import",
		"server/internal/decide depends on server/internal/route, which its layer may not import",
		"server/internal/decide depends on cluster, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestInprocRowCatchesAViolation: the gateway's in-memory client keeps to
// its row with the dependencies it has (the server serves its connections
// through inproc.Delegate, so it needs neither the transport nor the
// table), and the row refuses the front, the transport, a command family
// and the gateway above gateway/batch, directly or through another.
func TestInprocRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/inproc " + m + "gateway/batch"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/inproc " + m + "server/internal/resp " + m + "internal/wire",
		m + "server/internal/inproc " + m + "server/internal/decide",
		m + "server/internal/inproc " + m + "gateway",
	}
	assert.Equal(t, []string{
		"server/internal/inproc depends on server, which its layer may not import",
		"server/internal/inproc depends on server/internal/resp, which its layer may not import",
		"server/internal/inproc depends on internal/wire, which its layer may not import",
		"server/internal/inproc depends on server/internal/decide, which its layer may not import",
		"server/internal/inproc depends on gateway, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestIntrospectRowCatchesAViolation: COMMAND, its specs and its docs keep
// to introspect's row with the dependencies they have (the table is core's,
// handed to introspect.New), and the row refuses the front (where the
// cluster's docs are merged in), a family, and the store, directly or
// through another.
func TestIntrospectRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/introspect " + m + "internal/wire " + m + "window " + m + "policy " +
		m + "server/internal/resp " + m + "server/internal/core"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/introspect " + m + "server/internal/observe",
		m + "server/internal/introspect " + m + "server/internal/keyspace " + m + "shard",
	}
	assert.Equal(t, []string{
		"server/internal/introspect depends on server, which its layer may not import",
		"server/internal/introspect depends on server/internal/observe, which its layer may not import",
		"server/internal/introspect depends on server/internal/keyspace, which its layer may not import",
		"server/internal/introspect depends on shard, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestClientcmdRowCatchesAViolation: CLIENT keeps to clientcmd's row with
// the dependencies it has (the connections are core.Registry's sessions;
// tracking's part of a line and closing one come through a
// clientcmd.Delegate), and the row refuses the front, observe (whose
// flags, redirect and subscriptions reach a line through the Delegate),
// and the store, directly or through another.
func TestClientcmdRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/clientcmd " + m + "internal/wire " + m + "window " + m + "policy " +
		m + "server/internal/resp " + m + "server/internal/core"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/clientcmd " + m + "server/internal/observe",
		m + "server/internal/clientcmd " + m + "server/internal/durable " + m + "shard",
	}
	assert.Equal(t, []string{
		"server/internal/clientcmd depends on server, which its layer may not import",
		"server/internal/clientcmd depends on server/internal/observe, which its layer may not import",
		"server/internal/clientcmd depends on server/internal/durable, which its layer may not import",
		"server/internal/clientcmd depends on shard, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

// TestDebugcmdRowCatchesAViolation: DEBUG and its clock keep to debugcmd's
// row with the dependencies they have (the client's address is its
// core.Session's), and the row refuses the front, auth (which knows
// the address too, but is another family) and the store, directly or
// through another.
func TestDebugcmdRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/debugcmd " + m + "internal/wire " + m + "window " + m + "policy " +
		m + "server/internal/resp " + m + "server/internal/core"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/debugcmd " + m + "server/internal/auth",
		m + "server/internal/debugcmd " + m + "shard",
	}
	assert.Equal(t, []string{
		"server/internal/debugcmd depends on server, which its layer may not import",
		"server/internal/debugcmd depends on server/internal/auth, which its layer may not import",
		"server/internal/debugcmd depends on shard, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

func TestProcRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/proc"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		m + "server/internal/proc " + m + "server/internal/core",
		m + "server/internal/proc " + m + "server",
	}
	assert.Equal(t, []string{
		"server/internal/proc depends on server/internal/core, which its layer may not import",
		"server/internal/proc depends on server, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}

func TestMultiRowCatchesAViolation(t *testing.T) {
	m := module + "/"
	has := m + "server/internal/multi " + m + "internal/wire " + m + "window " + m + "policy " +
		m + "server/internal/resp " + m + "server/internal/core"
	assert.Empty(t, violations(has, t.Logf))
	bad := []string{
		has + " " + m + "server",
		m + "server/internal/multi " + m + "server/internal/observe",
		m + "server/internal/multi " + m + "shard",
	}
	assert.Equal(t, []string{
		"server/internal/multi depends on server, which its layer may not import",
		"server/internal/multi depends on server/internal/observe, which its layer may not import",
		"server/internal/multi depends on shard, which its layer may not import",
	}, violations(strings.Join(bad, "\n"), t.Logf))
}
