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
	{pkg: "client", allowed: []string{"client"}},                                                                // users' client library: speaks RESP like any client
	{pkg: "integrations", allowed: []string{"integrations", "client", "internal"}},                              // other languages' clients, from outside
	{pkg: "gateway/batch", allowed: []string{"gateway/batch"}},                                                  // the seam's types: the server implements it, the gateway asks it
	{pkg: "gateway", allowed: []string{"gateway"}},                                                              // Envoy's rate limit service: decides only through gateway/batch
	{pkg: "server", denied: []string{"cmd", "loadtest", "gateway/rlsconfig"}, deniedExact: []string{"gateway"}}, // it implements gateway/batch, and knows nothing else of the gateway
	{pkg: "internal", denied: []string{"cmd", "loadtest"}},
	{pkg: "cmd", denied: []string{"loadtest"}},
}

// TestLayering checks every package of the module against rules, over the
// dependency lists `go list -deps` reports (test files excluded), so an
// import through a third package counts too.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Deps \" \"}}", module+"/...").Output()
	require.NoError(t, err, "go list: %s", stderrOf(err))
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.NotEmpty(t, lines)
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg := ours(fields[0])
		r, ok := ruleFor(pkg)
		if !ok {
			t.Logf("package %s has no layering rule of its own; add it to rules", pkg)
			r = defaultRule
		}
		for _, dep := range fields[1:] {
			if d, mine := strings.CutPrefix(dep, module+"/"); mine && !r.permits(d) {
				t.Errorf("%s depends on %s, which its layer may not import", pkg, d)
			}
		}
	}
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
