package server

import (
	"strings"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPeerWordsAreRegistered: the commands a node sends its peers, named
// in cluster's words, are the ones the table registers, so the sending
// and the answering side cannot drift apart. COMMAND INFO answers an
// unknown command with a null.
func TestPeerWordsAreRegistered(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	for _, name := range []string{cluster.PeerCommand, cluster.HopCommand} {
		got, err := c.Do(ctxT(t), "COMMAND", "INFO", name).Slice()
		require.NoError(t, err, name)
		require.Len(t, got, 1, name)
		entry, ok := got[0].([]any)
		require.True(t, ok, "%s is not in the command table: %v", name, got[0])
		assert.Equal(t, strings.ToLower(name), entry[0])
	}
}
