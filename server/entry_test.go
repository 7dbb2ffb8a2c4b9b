package server

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
)

// TestEntryCarriesEveryAttribute: every field of the server's declaration
// (command) reaches the table's entry (core.Command) under the same name,
// so that an attribute added to the declaration cannot be dropped on the
// way by register.
func TestEntryCarriesEveryAttribute(t *testing.T) {
	s := newTestServer(t, Config{})
	d := command{name: "x", arity: -3, flags: core.FlagWrite | core.FlagPrefetch, run: cmdPing,
		subs:     []command{{name: "y", arity: 2, run: cmdPing}},
		firstKey: 1, lastKey: 1, keyStep: 1, group: "g", summary: "s", acl: core.CatRL,
		keys: []core.KeySpec{{Flags: core.KeyRW, Index: 1, Step: 1}}, follows: "z", peek: func(a [][]byte) ([][]byte, bool) { return a, true },
		changes: func(_ *Server, a [][]byte) ([][]byte, []byte) { return a[1:2], nil },
		blind:   func(bool) []int64 { return nil },
		wraps:   3, secret: core.HideArgs}
	cm := s.entry(&d)
	dv, cv := reflect.ValueOf(d), reflect.ValueOf(cm)
	for i := range dv.NumField() {
		f := dv.Type().Field(i)
		name := strings.ToUpper(f.Name[:1]) + f.Name[1:]
		if name == "Acl" {
			name = "ACL"
		}
		got := cv.FieldByName(name)
		if !assert.Truef(t, got.IsValid(), "core.Command has no %s for command.%s", name, f.Name) {
			continue
		}
		assert.Falsef(t, got.IsZero(), "entry dropped command.%s", f.Name)
	}
	assert.Equal(t, "y", cm.Subs[0].Name, "register names it x|y")
	assert.NotNil(t, cm.Subs[0].Run)
}
