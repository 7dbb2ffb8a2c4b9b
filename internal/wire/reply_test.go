package wire

import (
	"bufio"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/internal/wiretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplyEndFindsWholeRepliesOnly: every reply is found whole, and no
// prefix of one is taken for a reply.
func TestReplyEndFindsWholeRepliesOnly(t *testing.T) {
	replies := wiretest.Replies()
	for _, rep := range replies {
		n, err := ReplyEnd([]byte(rep + "+next\r\n"))
		require.NoError(t, err, rep)
		assert.Equal(t, len(rep), n, rep)
		for cut := range len(rep) {
			n, err := ReplyEnd([]byte(rep[:cut]))
			require.NoError(t, err, "%q", rep[:cut])
			assert.Zero(t, n, "%q is not whole", rep[:cut])
		}
	}
	for _, bad := range []string{"?x\r\n", "$2\r\nabc\r\n", ":1\n", "*x\r\n", "$-2\r\n", strings.Repeat("*1\r\n", 20) + ":1\r\n"} {
		_, err := ReplyEnd([]byte(bad))
		assert.ErrorIs(t, err, ErrBadReply, "%q", bad)
	}
}

// TestReadReplyTakesEachReplyWhole: ReadReply appends each reply exactly
// as it came, and refuses what ReplyEnd refuses.
func TestReadReplyTakesEachReplyWhole(t *testing.T) {
	replies := wiretest.Replies()
	r := bufio.NewReader(strings.NewReader(strings.Join(replies, "")))
	var dst []byte
	for _, rep := range replies {
		start := len(dst)
		var err error
		dst, err = ReadReply(r, dst)
		require.NoError(t, err, rep)
		assert.Equal(t, rep, string(dst[start:]))
	}
	for _, bad := range []string{"?x\r\n", "$2\r\nabc\r\n", ":1\n", "*x\r\n", strings.Repeat("*1\r\n", 20) + ":1\r\n"} {
		_, err := ReadReply(bufio.NewReader(strings.NewReader(bad)), nil)
		assert.ErrorIs(t, err, ErrBadReply, "%q", bad)
	}
}
