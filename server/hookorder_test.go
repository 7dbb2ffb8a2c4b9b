package server

import (
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/stretchr/testify/assert"
)

// TestTableHookOrder holds the order the table-change hooks run in: the
// handoff sets up each moving slot's state first, then the replicas
// promote their copies of a dead owner's slots, both before any request
// is routed by the new table. Moving either into its own package must
// keep them so.
func TestTableHookOrder(t *testing.T) {
	for _, tc := range []struct {
		replicas bool
		want     []string
	}{
		{false, []string{"handoffHook"}},
		{true, []string{"handoffHook", "OnTable"}}, // replica.Replicator.OnTable
	} {
		n := startTestNode(t, "hooks", nil, clusterOpts{replicas: tc.replicas})
		var got []string
		for _, h := range n.srv.ho.Hooks() {
			got = append(got, hookName(h))
		}
		assert.Equal(t, tc.want, got, "replicas: %t", tc.replicas)
	}
}

// hookName is the name of the method a hook is, without its receiver
// and package: the order must survive the methods' moving.
func hookName(h handoff.Hook) string {
	name := strings.TrimSuffix(runtime.FuncForPC(reflect.ValueOf(h).Pointer()).Name(), "-fm")
	return name[strings.LastIndex(name, ".")+1:]
}
