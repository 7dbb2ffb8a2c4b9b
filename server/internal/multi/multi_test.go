package multi

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/tidwall/redcon"

	"github.com/rlstore/rlstore/server/internal/core"
)

// server is a Delegate that records what EXEC asked of it.
type server struct {
	elsewhere bool
	calls     []string
}

func (s *server) Elsewhere(*core.Session, []core.Queued) bool { return s.elsewhere }

func (s *server) Run(x *core.Session, cm *core.Command, args [][]byte) {
	s.calls = append(s.calls, cm.Name)
	x.Out.WriteString("ran " + cm.Name)
}

func (s *server) InExec(_ *core.Session, on bool) {
	s.calls = append(s.calls, map[bool]string{true: "exec begins", false: "exec ends"}[on])
}

// session is a session outside MULTI writing to out.
func session(out *bytes.Buffer) (*core.Session, *redcon.Writer) {
	w := redcon.NewWriter(out)
	x := &core.Session{Out: w}
	x.QLen.Store(-1)
	return x, w
}

func run(t *testing.T, tx *Transactions, x *core.Session, name string) {
	t.Helper()
	for _, cm := range tx.Commands() {
		if cm.Name == name {
			cm.Run(x, [][]byte{[]byte(name)})
			return
		}
	}
	t.Fatalf("no %s", name)
}

// TestExecRunsTheQueueInOrder: EXEC replies with an array of the queued
// commands' replies, run in order between the delegate's InExec calls,
// and leaves MULTI.
func TestExecRunsTheQueueInOrder(t *testing.T) {
	var out bytes.Buffer
	x, w := session(&out)
	d := &server{}
	tx := New(d)
	run(t, tx, x, "multi")
	assert.True(t, x.Multi)
	assert.Zero(t, x.QLen.Load())
	x.Queue = []core.Queued{{Cmd: &core.Command{Name: "ping"}}, {Cmd: &core.Command{Name: "rl.slide"}}}
	run(t, tx, x, "exec")
	assert.NoError(t, w.Flush())
	assert.Equal(t, "+OK\r\n*2\r\n+ran ping\r\n+ran rl.slide\r\n", out.String())
	assert.Equal(t, []string{"exec begins", "ping", "rl.slide", "exec ends"}, d.calls)
	assert.False(t, x.Multi)
	assert.Nil(t, x.Queue)
	assert.Equal(t, int32(-1), x.QLen.Load())
}

// TestExecRefusals: EXEC and DISCARD without MULTI, a nested MULTI, a
// doomed transaction, a transaction run elsewhere, and WATCH in and out
// of MULTI answer as Redis words them, running nothing.
func TestExecRefusals(t *testing.T) {
	for _, tc := range []struct {
		name      string
		multi     bool
		dirty     bool
		elsewhere bool
		cmd, want string
	}{
		{name: "EXEC without MULTI", cmd: "exec", want: "-" + ErrExecNoMulti + "\r\n"},
		{name: "DISCARD without MULTI", cmd: "discard", want: "-" + ErrDiscNoMulti + "\r\n"},
		{name: "nested MULTI", multi: true, cmd: "multi", want: "-" + ErrMultiNested + "\r\n"},
		{name: "doomed", multi: true, dirty: true, cmd: "exec", want: "-" + ErrExecAbort + "\r\n"},
		{name: "elsewhere", multi: true, elsewhere: true, cmd: "exec", want: ""},
		{name: "DISCARD", multi: true, cmd: "discard", want: "+OK\r\n"},
		{name: "WATCH", cmd: "watch", want: "-" + ErrNoWatch + "\r\n"},
		{name: "WATCH in MULTI", multi: true, cmd: "watch", want: "-" + ErrWatchInMulti + "\r\n"},
		{name: "UNWATCH", cmd: "unwatch", want: "+OK\r\n"},
	} {
		var out bytes.Buffer
		x, w := session(&out)
		x.Multi, x.Dirty = tc.multi, tc.dirty
		x.Queue = []core.Queued{{Cmd: &core.Command{Name: "ping"}}}
		d := &server{elsewhere: tc.elsewhere}
		run(t, New(d), x, tc.cmd)
		assert.NoError(t, w.Flush())
		assert.Equal(t, tc.want, out.String(), tc.name)
		assert.Empty(t, d.calls, tc.name)
	}
}

// TestEntriesFrameATransaction: MULTI and EXEC declare that they open and
// run a transaction, so a transaction sent whole to a peer is framed by
// them (core.Table.TxFrame) with no name spelled elsewhere.
func TestEntriesFrameATransaction(t *testing.T) {
	tb := core.NewTable()
	for _, cm := range New(&server{}).Commands() {
		tb.Register(cm, nil)
	}
	open, run := tb.TxFrame()
	assert.Equal(t, [][]byte{[]byte("MULTI")}, open)
	assert.Equal(t, [][]byte{[]byte("EXEC")}, run)
}
