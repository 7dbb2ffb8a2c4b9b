package durable

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
	"github.com/tidwall/redcon"
)

// conn is a Conn that keeps what is written to it.
type conn struct{ *redcon.Writer }

func (conn) Close() error           { return nil }
func (conn) PeekPipeline() [][]byte { return nil }
func (conn) ReadPipeline() [][]byte { return nil }
func newConn() conn                 { return conn{redcon.NewWriter(nil)} }
func (c conn) String() string       { return string(c.Buffer()) }

func TestAdmitted(t *testing.T) {
	for reply, want := range map[string]bool{
		"*4\r\n:1\r\n:9\r\n:0\r\n:60\r\n": true,
		"*4\r\n:0\r\n:0\r\n:5\r\n:60\r\n": false,
		":1\r\n":                          false,
		"*":                               false,
		"*1\r\n":                          false,
	} {
		assert.Equal(t, want, admitted([]byte(reply)), "admitted(%q)", reply)
	}
}

// TestHoldRefusesOnlyWrites: a failed commit replaces each held write's
// reply by the refusal, and sends every other reply as written, in order.
func TestHoldRefusesOnlyWrites(t *testing.T) {
	c := newConn()
	h := newHold(c)
	h.hold()
	h.WriteString("PONG")
	start := h.hold()
	h.WriteInt(1)
	h.markWrite(start)
	h.WriteBulkString("x")
	assert.Empty(t, c.String(), "nothing goes out while held")
	h.release("MISCONF no")
	assert.Equal(t, "+PONG\r\n-MISCONF no\r\n$1\r\nx\r\n", c.String())
	assert.False(t, h.holding)
	h.WriteInt(2)
	assert.Equal(t, "+PONG\r\n-MISCONF no\r\n$1\r\nx\r\n:2\r\n", c.String(), "not holding: straight through")
}

func TestKeyLocksSortAndShareARoute(t *testing.T) {
	var l keyLocks
	got := l.lock([][]byte{[]byte("b"), []byte("a"), []byte("b")}, nil, nil)
	assert.IsIncreasing(t, got)
	l.unlock(got)
	got = l.lock([][]byte{[]byte("b"), []byte("a")}, []byte("r"), nil)
	assert.Equal(t, []uint8{stripe([]byte("r"))}, got)
	l.unlock(got)
}

// TestOpenWithoutDurability: without persistence a connection's replies
// are not wrapped, and nothing is held.
func TestOpenWithoutDurability(t *testing.T) {
	w := New(Config{})
	var b Batch
	c := newConn()
	assert.Equal(t, Conn(c), w.Open(&b, &core.Session{}, c, 1, nil, nil))
	assert.False(t, b.Holding())
}
