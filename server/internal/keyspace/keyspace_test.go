package keyspace

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/shard"
	"github.com/rlstore/rlstore/window"
)

// out is a session's replies, each as one string.
type out struct{ replies []string }

func (o *out) WriteError(s string)      { o.add("-" + s) }
func (o *out) WriteString(s string)     { o.add("+" + s) }
func (o *out) WriteBulk(b []byte)       { o.add("$" + string(b)) }
func (o *out) WriteBulkString(s string) { o.add("$" + s) }
func (o *out) WriteInt(n int)           { o.add(":" + itoa(int64(n))) }
func (o *out) WriteInt64(n int64)       { o.add(":" + itoa(n)) }
func (o *out) WriteUint64(n uint64)     { o.add(":" + itoa(int64(n))) }
func (o *out) WriteArray(n int)         { o.add("*" + itoa(int64(n))) }
func (o *out) WriteNull()               { o.add("$-1") }
func (o *out) WriteRaw(b []byte)        { o.add(strings.TrimSpace(string(b))) }
func (o *out) WriteAny(any)             { o.add("?") }
func (o *out) add(s string)             { o.replies = append(o.replies, s) }

func itoa(n int64) string {
	if n < 0 {
		return "-" + itoa(-n)
	}
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}

// keyspaceAt is the key commands over a new store, at the time *now, with
// its table.
func keyspaceAt(t *testing.T, now *int64, cfg Config) (*Keyspace, *core.Table) {
	m, err := shard.New(shard.Config{})
	require.NoError(t, err)
	cfg.Store, cfg.Now = m, func() int64 { return *now }
	if cfg.Flush == nil {
		cfg.Flush = func() error { m.Flush(); return nil }
	}
	cfg.Hits, cfg.Misses = new(atomic.Int64), new(atomic.Int64)
	k := New(cfg)
	tb := core.NewTable()
	for _, cm := range k.Commands() {
		tb.Register(cm, nil)
	}
	return k, tb
}

// call runs words as the table resolves them, and returns the replies.
func call(tb *core.Table, proto int, words ...string) []string {
	var args [][]byte
	for _, w := range words {
		args = append(args, []byte(w))
	}
	o := &out{}
	x := &core.Session{Out: o, Proto: proto}
	cm, reply := tb.Resolve(args)
	if cm == nil {
		o.WriteError(reply)
	} else {
		cm.Run(x, args)
	}
	return o.replies
}

// The key commands over one key: a live key exists, has its algorithm's
// type, its expiry in PTTL and TTL, and goes with DEL; policy state is hidden.
func TestKeyCommands(t *testing.T) {
	now := time.Unix(1700000000, 0).UnixNano()
	forgot := []string{}
	k, tb := keyspaceAt(t, &now, Config{Forget: func(key []byte) { forgot = append(forgot, string(key)) }})
	p := window.Params{Kind: window.KindSlide, Limit: 10, Period: time.Minute}
	_, err := k.cfg.Store.Decide([]byte("a"), p, now, 1, false)
	require.NoError(t, err)

	assert.Equal(t, []string{":2"}, call(tb, 2, "EXISTS", "a", "a", "b"))
	assert.Equal(t, []string{"+slide"}, call(tb, 2, "type", "a"))
	assert.Equal(t, []string{"+none"}, call(tb, 2, "TYPE", "b"))
	pttl := call(tb, 2, "PTTL", "a")[0]
	assert.NotEqual(t, ":-2", pttl)
	assert.Equal(t, []string{":-2"}, call(tb, 2, "PTTL", "b"))
	assert.Equal(t, []string{":1"}, call(tb, 2, "DBSIZE"))
	assert.Equal(t, []string{"*1", "$a"}, call(tb, 2, "KEYS", "*"))
	assert.Equal(t, []string{"*2", "$0", "*1", "$a"}, call(tb, 2, "SCAN", "0", "TYPE", "SLIDE", "COUNT", "1000000"))
	assert.Equal(t, []string{"-ERR invalid cursor"}, call(tb, 2, "SCAN", "x"))
	assert.Equal(t, []string{"$slide"}, call(tb, 2, "OBJECT", "ENCODING", "a"))
	assert.Equal(t, []string{"$-1"}, call(tb, 2, "OBJECT", "ENCODING", "b"))
	assert.Equal(t, []string{"_"}, call(tb, 3, "OBJECT", "REFCOUNT", "b"), "RESP3's null")
	assert.Equal(t, []string{"-" + ErrNoFreq}, call(tb, 2, "OBJECT", "FREQ", "a"))
	assert.Equal(t, []string{":1"}, call(tb, 2, "DEL", "a", "a"), "a key named twice counts once")
	assert.Equal(t, []string{"a", "a"}, forgot)
	assert.Equal(t, []string{":0"}, call(tb, 2, "EXISTS", "a"))
	assert.Equal(t, int64(4), k.cfg.Hits.Load(), "EXISTS counts each key, TYPE and PTTL theirs")
	assert.Equal(t, []string{"*2", "+USAGE: Returns the bytes a key's state holds", "+HELP: Lists MEMORY's subcommands"}, call(tb, 2, "MEMORY", "HELP"))
}

// FLUSHALL goes through Flush, and refuses an option it does not know;
// SWAPDB and MOVE know only database 0, and refuse in a cluster.
func TestFlushAndDatabases(t *testing.T) {
	now, flushed, forgotAll := int64(1), 0, 0
	_, tb := keyspaceAt(t, &now, Config{Flush: func() error { flushed++; return nil }, ForgetAll: func() { forgotAll++ }})
	assert.Equal(t, []string{"+OK"}, call(tb, 2, "FLUSHALL", "ASYNC"))
	assert.Equal(t, []string{"+OK"}, call(tb, 2, "FLUSHDB"))
	assert.Equal(t, []string{"-ERR syntax error"}, call(tb, 2, "FLUSHALL", "LATER"))
	assert.Equal(t, []int{2, 2}, []int{flushed, forgotAll})
	assert.Equal(t, []string{"+OK"}, call(tb, 2, "SWAPDB", "0", "0"))
	assert.Equal(t, []string{"-ERR DB index is out of range"}, call(tb, 2, "SWAPDB", "0", "1"))
	assert.Equal(t, []string{"-ERR source and destination objects are the same"}, call(tb, 2, "MOVE", "k", "0"))
	_, tb = keyspaceAt(t, &now, Config{Clustered: true})
	assert.Equal(t, []string{"-" + ErrMoveCluster}, call(tb, 2, "MOVE", "k", "0"))
}

// FuzzScanArgs: SCAN's argument parser never panics.
func FuzzScanArgs(f *testing.F) {
	f.Add("0 MATCH a* COUNT 10 TYPE slide")
	f.Fuzz(func(t *testing.T, in string) {
		args := [][]byte{[]byte("scan")}
		for _, w := range strings.Split(in, " ") {
			args = append(args, []byte(w))
		}
		_, _ = parseScan(args)
	})
}
