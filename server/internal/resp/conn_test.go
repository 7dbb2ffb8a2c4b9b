package resp

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The arguments of a request parsed ahead are the connection's own slice
// of aheadArgs, capped at its end: a command that appends to its arguments
// leaves the next request's as they were, and AheadArg and Current see the
// same arguments Command returns.
func TestAheadArgsStayEachRequests(t *testing.T) {
	rc := NewConn(&Guard{}, 1<<10, 0, nil)
	rc.Feed([]byte(respCmd("SET", "a", "1") + respCmd("GET", "b") + respCmd("PING")))
	rc.ParseAhead(16)
	require.Equal(t, 3, rc.Ahead())
	assert.Equal(t, "b", string(rc.AheadArg(1, 1)))
	var got []string
	for n := 0; ; n++ {
		args, err := rc.Command()
		require.NoError(t, err)
		if args == nil {
			break
		}
		i, cur := rc.Current()
		assert.Equal(t, n, i)
		assert.Equal(t, args, cur)
		assert.Equal(t, len(args), cap(args))
		for _, a := range args {
			got = append(got, string(a))
		}
		_ = append(args, []byte("appended"))
		args[0] = []byte("changed")
	}
	assert.Equal(t, []string{"SET", "a", "1", "GET", "b", "PING"}, got)
}

// respCmd is the RESP array of bulk strings a client sends for args.
func respCmd(args ...string) string {
	b := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		b += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return b
}
