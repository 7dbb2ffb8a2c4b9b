package server

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// goldenDir holds rlstore's own answers to COMMAND, COMMAND INFO and
// COMMAND DOCS, and a dump of its command table, as they were when the
// table's attributes were declared. Moving the server into packages must
// leave every byte of them as it is: a registration lost or reordered, a
// rename that takes another command along, a flag or key spec dropped on
// the way show here first. Rewrite them, after checking the diff, with
//
//	RLSTORE_UPDATE_GOLDEN=1 go test -run TestCommandTableGolden ./server/
var goldenDir = filepath.Join("testdata", "golden")

// goldenRenames are the renames the renamed table's dump is taken with: a
// command renamed, one disabled with the one that follows it, a parent.
var goldenRenames = map[string]string{"rl.slide": "slide", "flushall": "", "config": "cfg"}

func TestCommandTableGolden(t *testing.T) {
	s, addr := startServer(t, Config{})
	renamed := newTestServer(t, Config{RenameCommands: goldenRenames})
	dumps := map[string][]byte{
		"command-table.txt":         tableDump(s),
		"command-table-renamed.txt": tableDump(renamed),
	}
	for _, proto := range []string{"2", "3"} {
		conn := dialRaw(t, addr)
		rawCall(t, conn, "HELLO", proto)
		dumps["command.resp"+proto] = rawCall(t, conn, "COMMAND")
		dumps["command-info.resp"+proto] = rawCall(t, conn, append([]string{"COMMAND", "INFO"}, tableNames(s)...)...)
		dumps["command-docs.resp"+proto] = rawCall(t, conn, "COMMAND", "DOCS")
	}
	for file, got := range dumps {
		path := filepath.Join(goldenDir, file)
		if os.Getenv("RLSTORE_UPDATE_GOLDEN") != "" {
			require.NoError(t, os.WriteFile(path, got, 0o644))
			continue
		}
		want, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "%s differs from the golden dump", file)
	}
}

// tableNames returns the names the table serves, sorted.
func tableNames(s *Server) []string {
	var names []string
	for name := range s.table.Names() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// tableDump writes the table as dispatch sees it: each name it serves, the
// command it runs, and every attribute the command's entry declares, with
// rlstore's own flags after Redis's.
func tableDump(s *Server) []byte {
	var b strings.Builder
	for _, name := range tableNames(s) {
		cm := s.table.Lookup(name)
		fmt.Fprintf(&b, "%s -> %s\n", name, cm.Name)
		dumpCommand(&b, cm)
		for i := range cm.Subs {
			dumpCommand(&b, &cm.Subs[i])
		}
	}
	return []byte(b.String())
}

func dumpCommand(b *strings.Builder, cm *core.Command) {
	own := []string{"noqueue", "allkeys", "barrier", "cacheable", "prefetch", "announces", "keepscaching", "openstx", "runstx"}
	flags := cm.Flags.Names()
	for i, n := range own {
		if cm.Flags&(1<<(core.RedisFlagCount+i)) != 0 {
			flags = append(flags, n)
		}
	}
	assertNoUnnamedFlags(cm.Flags, len(own))
	fmt.Fprintf(b, "\t%s arity=%d flags=%v acl=%v keys=%d,%d,%d group=%s follows=%s",
		cm.Name, cm.Arity, flags, cm.ACL.Names(), cm.FirstKey, cm.LastKey, cm.KeyStep, cm.Group, cm.Follows)
	for _, k := range cm.Keys {
		fmt.Fprintf(b, " spec=%v@%d..%d/%d", k.Flags.Names(), k.Index, k.LastKey, k.Step)
	}
	fmt.Fprintf(b, " peek=%t changes=%t blind=%t wraps=%d secret=%t subs=%d\n",
		cm.Peek != nil, cm.Changes != nil, cm.Blind != nil, cm.Wraps, cm.Secret != nil, len(cm.Subs))
}

// assertNoUnnamedFlags panics on a flag the dump has no name for: a new
// one must be named in dumpCommand so that the golden dump shows it.
func assertNoUnnamedFlags(f core.Flags, own int) {
	if f>>(core.RedisFlagCount+own) != 0 {
		panic("tableDump: name the new command flag in dumpCommand")
	}
}
