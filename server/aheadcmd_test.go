package server

import (
	"bufio"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A pipelined batch resolves each request's command from the lookup its
// prefetch made (core.Session.Ahead): every request gets the reply it gets
// sent on its own, where nothing is parsed ahead. The batch mixes keyed and
// keyless commands, subcommands, wrong arities, unknown and lower-case
// names, more requests than one prefetch parses, and a server with renamed
// commands (whose old names must stay unknown).
func TestAheadCommandRepliesAsAlone(t *testing.T) {
	var reqs []string
	for i := range 3 {
		id := "id" + strconv.Itoa(i)
		reqs = append(reqs,
			respCmd("RL.ACQUIRE", "k", "2", "30s", "ID", id),
			respCmd("rl.release", "k", id),
			respCmd("RL.RELEASE", "k"), // wrong arity, right after the command it names
			respCmd("RL.ACQUIRE", "k", "2"),
			respCmd("CLIENT", "SETNAME", "n"+id),
			respCmd("CLIENT", "GETNAME"),
			respCmd("CLIENT", "NOSUCH"),
			respCmd("PING"),
			respCmd("ECHO", "e"),
			respCmd("NOSUCH", "k", "v"),
			respCmd("RL.RESERVE", "r", "token", "100", "10", "60", "COST", "5", "TTL", "30s", "ID", id),
			respCmd("RL.COMMIT", "r", id, "ACTUAL", "3"),
			respCmd("RL.SLIDE", "s", "5", "60"),
			respCmd("SLIDE-9C", "s", "5", "60"),
		)
	}
	for _, cfg := range []func() Config{
		func() Config { return Config{} },
		func() Config {
			return Config{RenameCommands: map[string]string{"rl.slide": "slide-9c", "rl.release": "rel-9c"}}
		},
	} {
		clk := newFakeClock(time.Unix(1_700_000_000, 0))
		alone, piped := cfg(), cfg()
		alone.Clock, piped.Clock = clk.Now, clk.Now
		_, a := startServer(t, alone)
		_, p := startServer(t, piped)
		want := sendReplies(t, a, reqs, false)
		got := sendReplies(t, p, reqs, true)
		for i := range reqs {
			require.Equal(t, want[i], got[i], "request %d %q", i, reqs[i])
		}
	}
}

// sendReplies sends reqs to addr, all in one write if piped, else each
// after the reply to the one before, and returns each raw reply.
func sendReplies(t *testing.T, addr string, reqs []string, piped bool) []string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	r := bufio.NewReader(c)
	var out []string
	if piped {
		all := ""
		for _, q := range reqs {
			all += q
		}
		_, err := io.WriteString(c, all)
		require.NoError(t, err)
	}
	for _, q := range reqs {
		if !piped {
			_, err := io.WriteString(c, q)
			require.NoError(t, err)
		}
		out = append(out, rawReply(t, r))
	}
	return out
}

// rawReply reads one whole RESP2 reply.
func rawReply(t *testing.T, r *bufio.Reader) string {
	t.Helper()
	line, err := r.ReadString('\n')
	require.NoError(t, err)
	switch line[0] {
	case '*':
		n, err := strconv.Atoi(line[1 : len(line)-2])
		require.NoError(t, err)
		for range max(n, 0) {
			line += rawReply(t, r)
		}
	case '$':
		n, err := strconv.Atoi(line[1 : len(line)-2])
		require.NoError(t, err)
		if n >= 0 {
			b := make([]byte, n+2)
			_, err := io.ReadFull(r, b)
			require.NoError(t, err)
			line += string(b)
		}
	}
	return line
}
