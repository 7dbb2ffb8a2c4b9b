package core

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// out is a session's replies, as the pipeline and the commands write them.
type out struct{ replies []string }

func (o *out) WriteError(s string)      { o.replies = append(o.replies, "-"+s) }
func (o *out) WriteString(s string)     { o.replies = append(o.replies, "+"+s) }
func (o *out) WriteBulk(b []byte)       { o.replies = append(o.replies, "$"+string(b)) }
func (o *out) WriteBulkString(s string) { o.replies = append(o.replies, "$"+s) }
func (o *out) WriteInt(n int)           { o.replies = append(o.replies, ":") }
func (o *out) WriteInt64(n int64)       { o.replies = append(o.replies, ":") }
func (o *out) WriteUint64(n uint64)     { o.replies = append(o.replies, ":") }
func (o *out) WriteArray(n int)         { o.replies = append(o.replies, "*") }
func (o *out) WriteNull()               { o.replies = append(o.replies, "_") }
func (o *out) WriteRaw(b []byte)        { o.replies = append(o.replies, string(b)) }
func (o *out) WriteAny(v any)           { o.replies = append(o.replies, "?") }
func (o *out) last() string             { return o.replies[len(o.replies)-1] }
func args(words ...string) (a [][]byte) {
	for _, w := range words {
		a = append(a, []byte(w))
	}
	return a
}

// steps records which delegates the pipeline asked, in order.
type steps struct {
	log     []string
	deny    string // Permit's reply
	forward bool   // Route's answer
	watch   bool
}

func (d *steps) Permit(x *Session, cm *Command, _ [][]byte) string {
	d.log = append(d.log, "permit "+cm.Name)
	return d.deny
}

func (d *steps) Route(x *Session, cm *Command, a [][]byte) bool {
	d.log = append(d.log, "route "+cm.Name)
	if !d.forward {
		d.Run(x, cm, a)
	}
	return d.forward
}

func (d *steps) Run(x *Session, cm *Command, a [][]byte) {
	d.log = append(d.log, "run "+cm.Name)
	x.LastCmd.Store(cm)
	cm.Run(x, a)
}

func (d *steps) Watching() bool { return d.watch }

func (d *steps) Forwarded(_ *Session, cm *Command, _ [][]byte) {
	d.log = append(d.log, "forwarded "+cm.Name)
}

func ok(x *Session, _ [][]byte) { x.Out.WriteString("OK") }

// testPipeline is a pipeline over a small table: GET (one key), AUTH (no
// auth needed), MULTI (not queued), SHUTDOWN (not in MULTI), CLIENT with
// one subcommand.
func testPipeline(d *steps, cluster bool) *Pipeline {
	t := NewTable()
	for _, cm := range []Command{
		{Name: "get", Arity: 2, Run: ok, FirstKey: 1, LastKey: 1, KeyStep: 1},
		{Name: "auth", Arity: -2, Flags: FlagNoAuth, Run: ok},
		{Name: "multi", Arity: 1, Flags: FlagNoQueue, Run: func(x *Session, _ [][]byte) { x.Multi = true }},
		{Name: "shutdown", Arity: -1, Flags: FlagNoTx, Run: ok},
		{Name: "client", Arity: -2, Subs: []Command{{Name: "client|id", Arity: 2, Run: ok}}},
	} {
		cm.Stats = new(Stats)
		for i := range cm.Subs {
			cm.Subs[i].Stats = new(Stats)
		}
		t.Add(&cm)
	}
	p := &Pipeline{Table: t, MaxQueueBytes: 64, Permit: d, Run: d, Observe: d}
	if cluster {
		p.Route = d
	}
	return p
}

// The pipeline checks in Redis's processCommand order: the name, the
// arity, auth, the ACL, MULTI, then routes and runs.
func TestDispatchOrder(t *testing.T) {
	for _, tc := range []struct {
		name           string
		cluster        bool
		authed, multi  bool
		limited        bool
		deny           string
		forward, watch bool
		call           []string
		wantReply      string
		wantLog        []string
		wantRejected   bool
	}{
		{name: "unknown", authed: true, call: []string{"nope", "a"}, wantReply: "-ERR unknown command 'nope', with args beginning with: 'a' "},
		{name: "unknown subcommand", authed: true, call: []string{"client", "x"}, wantReply: "-ERR unknown subcommand 'x'. Try CLIENT HELP."},
		{name: "arity before auth", call: []string{"get"}, wantReply: "-ERR wrong number of arguments for 'get' command", wantRejected: true},
		{name: "subcommand arity", authed: true, call: []string{"client", "id", "x"}, wantReply: "-ERR wrong number of arguments for 'client|id' command", wantRejected: true},
		{name: "auth before the ACL", limited: true, deny: "NOPERM x", call: []string{"get", "k"}, wantReply: "-" + ErrNoAuth, wantRejected: true},
		{name: "no auth needed", call: []string{"AUTH", "pw"}, wantReply: "+OK", wantLog: []string{"run auth"}},
		{name: "ACL", authed: true, limited: true, deny: "NOPERM x", call: []string{"get", "k"}, wantReply: "-NOPERM x", wantLog: []string{"permit get"}, wantRejected: true},
		{name: "ACL before MULTI", authed: true, multi: true, limited: true, deny: "NOPERM x", call: []string{"get", "k"}, wantReply: "-NOPERM x", wantLog: []string{"permit get"}, wantRejected: true},
		{name: "ACL allows", authed: true, limited: true, call: []string{"get", "k"}, wantReply: "+OK", wantLog: []string{"permit get", "run get"}},
		{name: "queued", authed: true, multi: true, cluster: true, call: []string{"get", "k"}, wantReply: "+QUEUED"},
		{name: "not in MULTI", authed: true, multi: true, call: []string{"shutdown"}, wantReply: "-" + ErrNotInMulti},
		{name: "queue too large", authed: true, multi: true, call: []string{"get", string(make([]byte, 64))}, wantReply: "-" + ErrQueueSize},
		{name: "no cluster", authed: true, call: []string{"get", "k"}, wantReply: "+OK", wantLog: []string{"run get"}},
		{name: "routed here", authed: true, cluster: true, call: []string{"get", "k"}, wantReply: "+OK", wantLog: []string{"route get", "run get"}},
		{name: "forwarded", authed: true, cluster: true, forward: true, watch: true, call: []string{"get", "k"}, wantLog: []string{"route get", "forwarded get"}},
		{name: "forwarded unwatched", authed: true, cluster: true, forward: true, call: []string{"get", "k"}, wantLog: []string{"route get"}},
		{name: "MULTI's own command in a cluster", authed: true, multi: true, cluster: true, call: []string{"multi"}, wantLog: []string{"route multi", "run multi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &steps{deny: tc.deny, forward: tc.forward, watch: tc.watch}
			p := testPipeline(d, tc.cluster)
			o := &out{}
			x := &Session{Out: o, Authed: tc.authed, Multi: tc.multi, Limited: tc.limited}
			p.Dispatch(x, args(tc.call...))
			if tc.wantReply != "" {
				require.NotEmpty(t, o.replies)
				assert.Equal(t, tc.wantReply, o.last())
			}
			assert.Equal(t, tc.wantLog, d.log)
			if cm := entryOf(p.Table, tc.call); cm != nil {
				assert.Equal(t, tc.wantRejected, cm.Stats.Rejected.Load() == 1, "rejected counted")
			}
			if tc.multi && tc.wantReply != "" && tc.wantReply[0] == '-' {
				assert.True(t, x.Dirty, "a refusal inside MULTI dooms the transaction")
			}
		})
	}
}

// entryOf is the entry call names, without counting anything.
func entryOf(t *Table, call []string) *Command {
	cm := t.Lookup(strings.ToLower(call[0]))
	if cm != nil && len(cm.Subs) > 0 && len(call) > 1 {
		return cm.Sub([]byte(call[1]))
	}
	return cm
}

// The command run last, and for a peer the one that wraps its requests,
// are found without the table; a renamed table always asks the table, so
// an old name is never served from the last command.
func TestResolveForTriesLast(t *testing.T) {
	p := testPipeline(&steps{}, false)
	hop := &Command{Name: "rl.hop", Arity: -4, Wraps: 3, Run: ok, Stats: new(Stats)}
	p.Table.Add(hop)
	assert.Same(t, hop, p.Table.Hop())
	x := &Session{Out: &out{}, Authed: true}
	get := p.Table.Lookup("get")
	x.LastCmd.Store(get)
	cm, _ := p.Table.ResolveFor(x, args("GET", "k"))
	assert.Same(t, get, cm)
	cm, reply := p.Table.ResolveFor(x, args("GET"))
	assert.Nil(t, cm, "the last command's arity still holds")
	assert.Equal(t, "ERR wrong number of arguments for 'get' command", reply)
	x.Peer = true
	cm, _ = p.Table.ResolveFor(x, args("rl.hop", "1", "2", "get", "k"))
	assert.Same(t, hop, cm)

	require.NoError(t, p.Table.Rename(map[string]string{"GET": "fetch"}))
	cm, reply = p.Table.ResolveFor(x, args("get", "k"))
	assert.Nil(t, cm, "renamed away, though it ran last")
	assert.Contains(t, reply, "unknown command 'get'")
	cm, _ = p.Table.ResolveFor(x, args("FETCH", "k"))
	assert.Same(t, get, cm)
}

// Renaming a command disables the one that follows it, unless that one
// is renamed too; a rename onto a name taken, or of no command, fails.
func TestRename(t *testing.T) {
	table := func() *Table {
		tb := NewTable()
		tb.Add(&Command{Name: "flushall", Run: ok})
		tb.Add(&Command{Name: "flushdb", Follows: "flushall", Run: ok})
		tb.Add(&Command{Name: "ping", Run: ok})
		return tb
	}
	tb := table()
	require.NoError(t, tb.Rename(map[string]string{"FLUSHALL": ""}))
	assert.Nil(t, tb.Lookup("flushall"))
	assert.Nil(t, tb.Lookup("flushdb"), "follows FLUSHALL")
	assert.True(t, tb.Renamed())

	tb = table()
	require.NoError(t, tb.Rename(map[string]string{"flushall": "wipe", "flushdb": "flushdb"}))
	assert.Equal(t, "flushall", tb.Lookup("wipe").Name, "replies keep the command's own name")
	assert.NotNil(t, tb.Lookup("flushdb"))

	assert.EqualError(t, table().Rename(map[string]string{"nope": "x"}), `server: rename-command: no command "nope"`)
	assert.EqualError(t, table().Rename(map[string]string{"ping": "flushdb"}), `server: rename-command: "flushdb" names a command already`)
}

// A slot holds one concern's state in each session, typed.
func TestSlots(t *testing.T) {
	type a struct{ n int }
	type b struct{ s string }
	var slots Slots
	ka, kb := NewSlot[a](&slots), NewSlot[b](&slots)
	x := &Session{}
	assert.Nil(t, ka.Get(x), "none set")
	ka.Set(x, &a{1})
	kb.Set(x, &b{"x"})
	assert.Equal(t, 1, ka.Get(x).n)
	assert.Equal(t, "x", kb.Get(x).s)
	assert.Panics(t, func() {
		for range maxSlots {
			NewSlot[a](&slots)
		}
	})
}

// Declare merges a spec into the entry: flags, implied categories, key
// positions from the key specs; positions that disagree are a programmer error.
func TestDeclare(t *testing.T) {
	cm := &Command{Name: "get", Flags: FlagReadonly}
	cm.Declare(Spec{Flags: FlagFast, ACL: CatKeyspace, Keys: []KeySpec{{Flags: KeyRO, Index: 1, Step: 1}}})
	assert.Equal(t, FlagReadonly|FlagFast, cm.Flags)
	assert.Equal(t, []string{"@keyspace", "@read", "@fast"}, cm.ACL.Names())
	assert.Equal(t, []int{1, 1, 1}, []int{cm.FirstKey, cm.LastKey, cm.KeyStep})
	bad := &Command{Name: "x", FirstKey: 2, LastKey: 2, KeyStep: 1}
	assert.Panics(t, func() { bad.Declare(Spec{Keys: []KeySpec{{Index: 1, Step: 1}}}) })
	keys, ok := KeyIndexes([]KeySpec{{Index: 1, LastKey: -1, Step: 2}}, 6, nil)
	assert.True(t, ok)
	assert.Equal(t, []KeyArg{{1, 0}, {3, 0}, {5, 0}}, keys)
}

// The pipeline allocates nothing on its way to a command's run.
func TestDispatchAllocs(t *testing.T) {
	p := testPipeline(&steps{}, false)
	p.Run = runner{}
	x := &Session{Out: discard{&out{}}, Authed: true}
	call := args("GET", "k")
	p.Dispatch(x, call)
	assert.Zero(t, testing.AllocsPerRun(1000, func() { p.Dispatch(x, call) }))
}

type runner struct{}

func (runner) Run(x *Session, cm *Command, a [][]byte) { x.LastCmd.Store(cm); cm.Run(x, a) }

type discard struct{ *out }

func (discard) WriteString(string) {}

// TestKeyTooLong: every key position of the entry is checked, by its key
// specs' first, last and step, and a limit of 0 checks none.
func TestKeyTooLong(t *testing.T) {
	cm := &Command{FirstKey: 1, LastKey: -1, KeyStep: 2}
	args := [][]byte{[]byte("mset"), []byte("k"), []byte("a long value"), []byte("key3")}
	assert.Empty(t, cm.KeyTooLong(args, 4), "values are no keys")
	assert.Equal(t, "ERR key is longer than max-key-bytes (3 bytes)", cm.KeyTooLong(args, 3))
	assert.Empty(t, cm.KeyTooLong(args, 0))
	assert.Empty(t, (&Command{}).KeyTooLong(args, 1), "a command with no keys")
}

// TestTxFrame: the requests that frame a transaction sent whole to a peer
// are the entries that declare they open and run one, by their own names,
// whatever rename-command serves them under here.
func TestTxFrame(t *testing.T) {
	tb := NewTable()
	open, run := tb.TxFrame()
	assert.Nil(t, open, "no entry declares one")
	assert.Nil(t, run)
	tb.Register(Command{Name: "begin", Flags: FlagOpensTx, Run: ok}, nil)
	tb.Register(Command{Name: "commit", Flags: FlagRunsTx, Run: ok}, nil)
	require.NoError(t, tb.Rename(map[string]string{"begin": "b"}))
	open, run = tb.TxFrame()
	assert.Equal(t, [][]byte{[]byte("BEGIN")}, open)
	assert.Equal(t, [][]byte{[]byte("COMMIT")}, run)
}
