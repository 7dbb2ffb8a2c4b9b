package clientcmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/server/internal/core"
)

func args(ss ...string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}

// TestLineHasRedis7Fields: a connection's line keeps Redis 7's fields in
// its order, its own command's bytes only when it describes itself.
func TestLineHasRedis7Fields(t *testing.T) {
	now := time.Unix(1000, 0)
	i := Info{ID: 7, Addr: "127.0.0.1:5000", LAddr: "127.0.0.1:6379", FD: 9, Meta: core.Meta{Name: "n", LibName: "go-redis", LibVer: "9", Resp: 3},
		Created: now.Add(-5 * time.Second), LastRead: now.Add(-2 * time.Second), Cmd: "client|info", Multi: -1, OMem: 4, Redir: 3, Flags: "t"}
	assert.Equal(t, "id=7 addr=127.0.0.1:5000 laddr=127.0.0.1:6379 fd=9 name=n age=5 idle=2 flags=t db=0 sub=0 psub=0 ssub=0 multi=-1"+
		" qbuf=0 qbuf-free=0 argv-mem=10 multi-mem=6 rbs=0 rbp=0 obl=0 oll=0 omem=4 tot-mem=20 events=r cmd=client|info"+
		" user=default redir=3 resp=3 lib-name=go-redis lib-ver=9\n", i.Line(now, args("client", "info"), 6))
	i.Multi, i.Flags, i.Cmd = -1, "", ""
	assert.Contains(t, i.Line(now, nil, 0), " flags=N ", "no flags is N")
	assert.Contains(t, i.Line(now, nil, 0), " cmd=NULL ", "no command yet is NULL")
	i.Multi = 2
	assert.Contains(t, i.Line(now, nil, 0), " flags=x ", "in MULTI")
}

func TestParseKillFilter(t *testing.T) {
	f, reply := parseKillFilter(args("ID", "5", "skipme", "no", "USER", "default"))
	assert.Empty(t, reply)
	assert.Equal(t, killFilter{id: 5, user: "default"}, f)
	for _, bad := range [][]string{{"id"}, {"id", "0"}, {"skipme", "maybe"}, {"nope", "x"}} {
		_, reply = parseKillFilter(args(bad...))
		assert.NotEmpty(t, reply, "parseKillFilter(%q)", bad)
	}
	_, reply = parseKillFilter(args("id", "-1"))
	assert.Equal(t, errClientID, reply)
}

func TestParseListFilter(t *testing.T) {
	ids, reply := parseListFilter(args("id", "3", "4"))
	assert.Empty(t, reply)
	assert.Equal(t, map[int64]bool{3: true, 4: true}, ids)
	ids, _ = parseListFilter(args("type", "pubsub"))
	assert.Empty(t, ids, "no pubsub clients")
	_, reply = parseListFilter(args("id", "x"))
	assert.Equal(t, "ERR Invalid client ID", reply)
	_, reply = parseListFilter(args("junk"))
	assert.Equal(t, errSyntax, reply)
}
