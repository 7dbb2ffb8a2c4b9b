package cluster

import (
	"bufio"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replies are RESP2 and RESP3 replies of every kind, nested and null.
var replies = []string{
	"+OK\r\n", "-ERR no\r\n", ":42\r\n", "_\r\n", ",1.5\r\n", "#t\r\n", "(12345678901234567890\r\n",
	"$5\r\nhello\r\n", "$-1\r\n", "$0\r\n\r\n", "=8\r\ntxt:abcd\r\n", "!3\r\nerr\r\n",
	"*5\r\n:1\r\n:100\r\n:99\r\n:0\r\n:0\r\n", "*-1\r\n", "*0\r\n",
	"*2\r\n*1\r\n$1\r\nx\r\n%1\r\n+k\r\n:1\r\n", "~1\r\n$2\r\nab\r\n", ">2\r\n+a\r\n+b\r\n", "|1\r\n+a\r\n:1\r\n",
}

// TestReplyReaderAcrossChunks: replies trickled in a few bytes at a time,
// one larger than the read buffer among them, come out whole and in order,
// batch by batch.
func TestReplyReaderAcrossChunks(t *testing.T) {
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
