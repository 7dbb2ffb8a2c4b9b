package server

import (
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryCommandIsDocumented: every command and subcommand has a summary
// and a since in COMMAND DOCS, and every command that needs arguments lists them.
func TestEveryCommandIsDocumented(t *testing.T) {
	s := newTestServer(t, Config{})
	table := commandDocs()
	check := func(cm *core.Command) {
		d := table[cm.Name]
		summary := cm.Summary // COMMAND DOCS' summary is the entry's, else its Doc's
		if summary == "" {
			summary = d.Summary
		}
		assert.NotEmptyf(t, summary, "%s has no summary", cm.Name)
		assert.NotEmptyf(t, d.Since, "%s has no since", cm.Name)
		required := max(cm.Arity, -cm.Arity) - 1 - strings.Count(cm.Name, "|") // arguments after the name(s)
		if len(cm.Subs) == 0 && required > 0 {
			assert.NotEmptyf(t, d.Args, "%s takes arguments but lists none", cm.Name)
		}
	}
	for name, cm := range s.table.Names() {
		if strings.HasPrefix(name, "test.") {
			continue
		}
		check(cm)
		for i := range cm.Subs {
			check(&cm.Subs[i])
		}
	}
	for name := range table {
		parent, _, _ := strings.Cut(name, "|")
		require.NotNilf(t, s.table.Lookup(parent), "the docs name %s, which is not a command", name)
	}
}

func TestCommandDocsArguments(t *testing.T) {
	_, addr := startServer(t, Config{})
	bothProtocols(t, func(t *testing.T, proto int) {
		c, ctx := newClient(t, addr, proto), ctxT(t)
		docs := asMap(t, c.Do(ctx, "COMMAND", "DOCS", "rl.slide").Val())
		slide := asMap(t, docs["rl.slide"])
		assert.Equal(t, rlSince, slide["since"])
		args := slide["arguments"].([]any)
		require.Len(t, args, 5)
		assert.Equal(t, map[string]any{"name": "key", "type": "key", "key_spec_index": int64(0)}, asStrMap(t, args[0]))
		assert.Equal(t, map[string]any{"name": "cost", "type": "integer", "token": "COST", "flags": []any{"optional"}}, asStrMap(t, args[3]))
		assert.Equal(t, map[string]any{"name": "peek", "type": "pure-token", "token": "PEEK", "flags": []any{"optional"}}, asStrMap(t, args[4]))
	})
}

// asStrMap reads a map reply of either protocol keyed by strings.
func asStrMap(t *testing.T, v any) map[string]any {
	t.Helper()
	out := map[string]any{}
	for k, v := range asMap(t, v) {
		out[k] = v
	}
	return out
}
