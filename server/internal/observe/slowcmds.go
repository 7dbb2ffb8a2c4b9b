package observe

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Commands are SLOWLOG and LATENCY over sl.
func (sl *Slowlog) Commands() []core.Command {
	const ls = core.FlagLoading | core.FlagStale
	admin := core.FlagAdmin | core.FlagNoScript | ls
	return []core.Command{
		{Name: "slowlog", Arity: -2, Group: "server", Summary: "Shows the commands that ran slower than slowlog-log-slower-than", Subs: []core.Command{
			{Name: "get", Arity: -2, Flags: core.FlagAdmin | ls, Run: sl.get, Summary: "Returns the newest slow-log entries (10, or count; -1 all)"},
			{Name: "len", Arity: 2, Flags: core.FlagAdmin | ls, Run: sl.length, Summary: "Returns the number of slow-log entries"},
			{Name: "reset", Arity: 2, Flags: core.FlagAdmin | ls, Run: sl.reset, Summary: "Empties the slow log"},
			{Name: "help", Arity: 2, Flags: ls, Run: func(x *core.Session, _ [][]byte) { core.WriteHelp(x, &sl.Commands()[0]) }, Summary: "Lists SLOWLOG's subcommands"},
		}},
		{Name: "latency", Arity: -2, Group: "server", Summary: "The latency monitor", Subs: []core.Command{
			{Name: "latest", Arity: 2, Flags: admin, Run: sl.latestCmd, Summary: "Returns the latest and largest spike of each event"},
			{Name: "reset", Arity: -2, Flags: admin, Run: sl.resetLatency, Summary: "Forgets the spikes"},
			{Name: "help", Arity: 2, Flags: ls, Run: func(x *core.Session, _ [][]byte) { core.WriteHelp(x, &sl.Commands()[1]) }, Summary: "Lists LATENCY's subcommands"},
		}},
	}
}

func (sl *Slowlog) get(x *core.Session, args [][]byte) {
	n := int64(10)
	if len(args) > 2 {
		v, ok := policy.ParseInt(args[2])
		if !ok || v < -1 || len(args) > 3 {
			x.Out.WriteError("ERR count should be greater than or equal to -1")
			return
		}
		n = v
	}
	es := sl.Entries(n)
	x.Out.WriteArray(len(es))
	for _, e := range es {
		x.Out.WriteArray(6)
		x.Out.WriteInt64(e.ID)
		x.Out.WriteInt64(e.At)
		x.Out.WriteInt64(e.Usec)
		x.Out.WriteArray(len(e.Args))
		for _, a := range e.Args {
			x.Out.WriteBulkString(a)
		}
		x.Out.WriteBulkString(e.Addr)
		x.Out.WriteBulkString(e.Name)
	}
}

func (sl *Slowlog) length(x *core.Session, _ [][]byte) {
	x.Out.WriteInt(sl.Len())
}

func (sl *Slowlog) reset(x *core.Session, _ [][]byte) {
	sl.Reset()
	x.Out.WriteString("OK")
}

// latestCmd replies as Redis does: one entry per event that spiked,
// [name, unix time, latest ms, max ms]. rlstore has one event, "command".
func (sl *Slowlog) latestCmd(x *core.Session, _ [][]byte) {
	e := sl.Latest()
	if e.At == 0 {
		x.Out.WriteArray(0)
		return
	}
	x.Out.WriteArray(1)
	x.Out.WriteArray(4)
	x.Out.WriteBulkString("command")
	x.Out.WriteInt64(e.At)
	x.Out.WriteInt64(e.LatestMs)
	x.Out.WriteInt64(e.MaxMs)
}

func (sl *Slowlog) resetLatency(x *core.Session, _ [][]byte) {
	x.Out.WriteInt(sl.ResetLatency())
}
