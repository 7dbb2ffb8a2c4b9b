package introspect

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParseDocArg reads each form of an argument spec as COMMAND DOCS shows it.
func TestParseDocArg(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want docArg
	}{
		{"key:key", docArg{name: "key", typ: "key"}},
		{"?COST cost:integer", docArg{name: "cost", typ: "integer", token: "COST", optional: true}},
		{"?PEEK", docArg{name: "peek", typ: "pure-token", token: "PEEK", optional: true}},
		{"SLIDE|FIXED|TOKEN|POLICY", docArg{name: "slide-fixed-token-policy", typ: "oneof", oneof: []string{"SLIDE", "FIXED", "TOKEN", "POLICY"}}},
		{"?ADDR ip:port", docArg{name: "ip:port", typ: "string", token: "ADDR", optional: true}},
		{"*param", docArg{name: "param", typ: "string", multi: true}},
	} {
		assert.Equal(t, tc.want, parseDocArg(tc.spec), "parseDocArg(%q)", tc.spec)
	}
}

// TestSpecsAndDocsAreKeyedByTableNames: subcommands are "parent|sub", as
// the table names them, in both.
func TestSpecsAndDocsAreKeyedByTableNames(t *testing.T) {
	assert.Contains(t, Specs(), "client|list")
	assert.Contains(t, Docs(), "client|tracking")
	assert.Equal(t, RLSince, Docs()["rl.slide"].Since)
}
