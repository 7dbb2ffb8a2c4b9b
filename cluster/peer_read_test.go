package cluster

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/internal/wiretest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReplyReaderAcrossChunks: replies trickled in a few bytes at a time,
// one larger than the read buffer among them, come out whole and in order,
// batch by batch.
func TestReplyReaderAcrossChunks(t *testing.T) {
	replies := wiretest.Replies()
	big := "$100\r\n" + strings.Repeat("b", 100) + "\r\n"
	all := append(append([]string{}, replies...), big)
	all = append(all, replies...)
	pr, pw := io.Pipe()
	go func() {
		stream := strings.Join(all, "")
		for len(stream) > 0 {
			n := min(3, len(stream))
			_, _ = pw.Write([]byte(stream[:n]))
			stream = stream[n:]
		}
		_ = pw.Close()
	}()
	rr := &replyReader{r: bufio.NewReaderSize(pr, 32)}
	var got []string
	waits := 0
	for len(got) < len(all) {
		reps, err := rr.read(min(4, len(all)-len(got)), func() { waits++ })
		require.NoError(t, err)
		for _, r := range reps {
			got = append(got, string(r))
		}
	}
	assert.Equal(t, all, got)
	assert.NotZero(t, waits)
	_, err := rr.read(1, func() {})
	assert.ErrorIs(t, err, io.EOF)
}
