package cluster

import (
	"strings"
	"testing"

	"github.com/rlstore/rlstore/internal/wire"
	"github.com/stretchr/testify/assert"
)

// TestPeerHeadsMatchTheCodec: the encoded heads are what the codec writes
// for their words, so a word changed in one place changes them too or fails here.
func TestPeerHeadsMatchTheCodec(t *testing.T) {
	for head, sub := range map[string]string{PeerCopyHead: PeerCopy, PeerDeltaHead: PeerDelta} {
		enc := string(wire.AppendCommand(nil, [][]byte{[]byte(PeerCommand), []byte(sub), []byte("payload")}))
		assert.True(t, strings.HasPrefix(enc, head), "%q does not start %q", head, enc)
		assert.Equal(t, "7\r\npayload\r\n", strings.TrimPrefix(enc, head))
	}
	enc := string(wire.AppendCommand(nil, [][]byte{[]byte(HopCommand)}))
	assert.Equal(t, "*1\r\n"+HopHead, enc)
}

func TestIsWordFoldsCase(t *testing.T) {
	assert.True(t, IsWord([]byte("released"), PeerReleased))
	assert.True(t, IsWord([]byte("ReLeAsEd"), PeerReleased))
	assert.True(t, IsWord([]byte("rl.hop"), HopCommand))
	assert.False(t, IsWord([]byte("release"), PeerReleased))
	assert.False(t, IsWord([]byte("releasex"), PeerReleased))
	assert.False(t, IsWord([]byte("R\xccLEASED"), PeerReleased))
}
