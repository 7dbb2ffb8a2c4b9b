package core

import (
	"net"
	"testing"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// session returns a registered session of r on one end of a pipe.
func session(t *testing.T, r *Registry) *Session {
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	x := &Session{ID: r.NewID(), Conn: resp.NewConn(resp.NewGuard(a), 1<<20, 0, nil)}
	r.Add(x)
	return x
}

// TestRegistryListsKeepsAndForgets: the registry lists its live sessions
// in the order they came, leaves out a killed one at once, and keeps a
// gone one's commands in its sums.
func TestRegistryListsKeepsAndForgets(t *testing.T) {
	r := NewRegistry()
	x1, x2, x3 := session(t, r), session(t, r), session(t, r)
	assert.Equal(t, []int64{1, 2, 3}, []int64{x1.ID, x2.ID, x3.ID})
	x1.Cmds.Add(5)
	x3.Cmds.Add(2)
	assert.Equal(t, []*Session{x1, x2, x3}, r.List())
	assert.Same(t, x2, r.Get(2))

	x2.Kill()
	assert.Equal(t, []*Session{x1, x3}, r.List(), "a killed session leaves the list at once")
	assert.Equal(t, 3, r.Len(), "though it is registered until its goroutine forgets it")
	r.Remove(x2)
	r.Remove(x1)
	assert.Nil(t, r.Get(1))
	assert.Equal(t, 1, r.Len())
	assert.Equal(t, int64(7), r.Commands(), "a gone session's commands still count")

	victim, held := r.Largest()
	assert.Nil(t, victim, "no session holds replies")
	assert.Zero(t, held)
}

// TestSessionMeta: what a client says of itself is read and changed under
// the session's lock.
func TestSessionMeta(t *testing.T) {
	x := &Session{}
	x.SetMeta(func(m *Meta) { m.Name, m.Resp = "n", 3 })
	require.Equal(t, Meta{Name: "n", Resp: 3}, x.Meta())
}
