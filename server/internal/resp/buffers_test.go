package resp

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestConsume(t *testing.T) {
	bufs := func() net.Buffers { return net.Buffers{[]byte("ab"), []byte("cde"), []byte("f")} }
	assert.Equal(t, net.Buffers{[]byte("ab"), []byte("cde"), []byte("f")}, Consume(bufs(), 0))
	assert.Equal(t, net.Buffers{[]byte("b"), []byte("cde"), []byte("f")}, Consume(bufs(), 1))
	assert.Equal(t, net.Buffers{[]byte("cde"), []byte("f")}, Consume(bufs(), 2))
	assert.Equal(t, net.Buffers{[]byte("e"), []byte("f")}, Consume(bufs(), 4))
	assert.Empty(t, Consume(bufs(), 6))
}
