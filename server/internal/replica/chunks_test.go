package replica

import (
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSealMakesOneCommand: a chunk sealed in place is one whole RL.PEER
// COPY (or DELTA) command whose last argument is the chunk's payload, as
// the backup's parser reads it.
func TestSealMakesOneCommand(t *testing.T) {
	for _, prefix := range []string{copyPrefix, deltaPrefix} {
		chunk := append(make([]byte, copyHead), "payload\r\nwith a CRLF"...)
		cmd := seal(chunk, prefix)
		p := wire.Parser{Max: 1 << 20}
		n, err := p.Next(cmd)
		require.NoError(t, err)
		require.Equal(t, len(cmd), n, "one whole command")
		args := p.Args(cmd[:n], nil)
		require.Len(t, args, 3)
		assert.True(t, cluster.IsWord(args[0], cluster.PeerCommand))
		assert.Equal(t, "payload\r\nwith a CRLF", string(args[2]))
	}
}

// TestBulkArrayTakesWholeArraysOnly: the keys RL.PEER DELTA names back are
// read whole, and a reply cut short or of another shape is refused: a
// null array (*-1) too, which made the primary's reply goroutine panic.
func TestBulkArrayTakesWholeArraysOnly(t *testing.T) {
	keys, err := bulkArray([]byte("*2\r\n$1\r\na\r\n$3\r\nb:c\r\n"))
	require.NoError(t, err)
	assert.Equal(t, [][]byte{[]byte("a"), []byte("b:c")}, keys)
	for _, bad := range []string{"*2\r\n$1\r\na\r\n", "*1\r\n$5\r\nab\r\n", "+OK\r\n", "*1\r\n:1\r\n", "*-1\r\n"} {
		_, err := bulkArray([]byte(bad))
		assert.Error(t, err, "%q", bad)
	}
}
