package server

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// redis7Dir holds redis-server 7's answers to COMMAND DOCS and COMMAND INFO
// for the commands rlstore shares with it, recorded by TestRecordRedis7.
// Replaying them keeps the comparison stable where no redis-server runs,
// and where one of another version does.
var redis7Dir = filepath.Join("testdata", "redis7")

// TestRecordRedis7 records the golden data of redis7Dir from the
// redis-server at $RLSTORE_RECORD_REDIS7 (host:port, or a unix socket's
// path), for every command of rlstore's table that Redis knows:
//
//	redis-server --port 6390 --save '' &
//	RLSTORE_RECORD_REDIS7=127.0.0.1:6390 go test -run TestRecordRedis7 ./server/
//
// Without it, the test is skipped.
func TestRecordRedis7(t *testing.T) {
	addr := os.Getenv("RLSTORE_RECORD_REDIS7")
	if addr == "" {
		t.Skip("RLSTORE_RECORD_REDIS7 is not set: replaying the recorded answers")
	}
	network := "tcp"
	if strings.HasPrefix(addr, "/") {
		network = "unix"
	}
	for _, proto := range []string{"2", "3"} {
		conn, err := net.DialTimeout(network, addr, deadline)
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(deadline)))
		rawCall(t, conn, "HELLO", proto)
		names := sharedCommands(t, conn)
		for _, q := range redis7Queries(names) {
			var b []byte
			for _, call := range q.calls {
				b = append(b, rawCall(t, conn, call...)...)
			}
			require.NoError(t, os.WriteFile(filepath.Join(redis7Dir, q.file+".resp"+proto), b, 0o644))
		}
		_ = conn.Close()
	}
}

// sharedCommands returns the names of the commands of rlstore's table that
// the Redis at conn knows, sorted.
func sharedCommands(t *testing.T, conn net.Conn) []string {
	s := newTestServer(t, Config{})
	var names []string
	for name := range s.table.Names() {
		names = append(names, name)
	}
	sort.Strings(names)
	info := parseRESP(t, rawCall(t, conn, append([]string{"COMMAND", "INFO"}, names...)...))
	var shared []string
	for i, e := range info.elems {
		if !e.null {
			shared = append(shared, names[i])
		}
	}
	return shared
}

// redis7Query is a recorded file: its name, less the protocol's suffix,
// and the calls whose replies it holds, one after another.
type redis7Query struct {
	file  string
	calls [][]string
}

func redis7Queries(names []string) []redis7Query {
	return []redis7Query{
		{"command-docs", [][]string{append([]string{"COMMAND", "DOCS"}, names...)}},
		{"command-info", [][]string{append([]string{"COMMAND", "INFO"}, names...)}},
		{"command-getkeys", getKeysCalls()},
	}
}

// getKeysCalls are COMMAND GETKEYS and GETKEYSANDFLAGS calls of commands
// rlstore shares with Redis, and the errors of both.
func getKeysCalls() [][]string {
	var calls [][]string
	for _, call := range [][]string{
		{"DEL", "a", "b", "c"}, {"EXISTS", "a", "b"}, {"TYPE", "k"}, {"TTL", "k"}, {"PTTL", "k"},
		{"MEMORY", "USAGE", "k"}, {"MEMORY", "USAGE", "k", "SAMPLES", "5"}, {"OBJECT", "ENCODING", "k"},
		{"OBJECT", "FREQ", "k"}, {"OBJECT", "IDLETIME", "k"}, {"OBJECT", "REFCOUNT", "k"},
		{"WATCH", "a", "b"}, {"MOVE", "k", "1"},
		{"PING", "x"}, {"NOSUCH", "x"}, {"TYPE", "a", "b"}, {"OBJECT", "NOSUCH", "k"}, {"CLIENT", "LIST"},
		{"DBSIZE", "x"}, {"FLUSHALL", "ASYNC"}, {"MEMORY", "USAGE"},
	} {
		calls = append(calls, append([]string{"COMMAND", "GETKEYS"}, call...),
			append([]string{"COMMAND", "GETKEYSANDFLAGS"}, call...))
	}
	return calls
}

// redis7Golden returns the recorded answer of file for protocol proto.
func redis7Golden(t *testing.T, file string, proto int) respNode {
	t.Helper()
	replies := redis7GoldenAll(t, file, proto)
	require.Len(t, replies, 1, "%s holds one reply", file)
	return replies[0]
}

// redis7GoldenAll returns the recorded answers of file for protocol proto.
func redis7GoldenAll(t *testing.T, file string, proto int) []respNode {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(redis7Dir, file+".resp"+map[int]string{2: "2", 3: "3"}[proto]))
	require.NoError(t, err, "the recorded answers: see TestRecordRedis7")
	r := bufio.NewReader(bytes.NewReader(b))
	var out []respNode
	for r.Buffered() > 0 || len(out) == 0 {
		n, err := readRESP(r)
		require.NoError(t, err)
		out = append(out, n)
		if _, err := r.Peek(1); err != nil {
			break
		}
	}
	return out
}

// startRedisServer starts a redis-server of the test's own, with
// persistence off and extra arguments, on a unix socket, and returns a
// RESP2 client of it. It skips the test where redis-server is not
// installed (.ci/run installs it).
func startRedisServer(t *testing.T, extra ...string) *redis.Client {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "redis.sock")
	args := append([]string{"--port", "0", "--unixsocket", sock, "--save", "", "--appendonly", "no", "--dir", dir}, extra...)
	cmd := exec.Command(bin, args...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	c := redis.NewClient(&redis.Options{Network: "unix", Addr: sock, Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	eventually(t, "redis-server to start", func() bool { return c.Ping(context.Background()).Err() == nil })
	return c
}
