package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// The defaults of the slow log and the latency monitor, as redis-server's.
const (
	DefaultSlowlogSlowerThan = 10 * time.Millisecond
	DefaultSlowlogMaxLen     = 128
)

// recordSlow logs c's run of cm that took d in the slow log, if it was
// slow enough, and as a spike for the latency monitor, if it was one (ran
// asks s.slow which, two atomic loads). A secret command (cm.Secret) keeps
// only its name.
func (s *Server) recordSlow(c *client, cm *core.Command, args [][]byte, d time.Duration, slow, spiked bool) {
	if slow {
		s.slow.Add(args, cm.Secret != nil, d, c.addr, c.getMeta().name)
	}
	if spiked {
		s.slow.AddSpike(d)
	}
}

// slowlogCommands are SLOWLOG and LATENCY.
func slowlogCommands() []command {
	return []command{
		{name: "slowlog", arity: -2, group: "server", summary: "Shows the commands that ran slower than slowlog-log-slower-than", subs: []command{
			{name: "get", arity: -2, run: cmdSlowlogGet, summary: "Returns the newest slow-log entries (10, or count; -1 all)"},
			{name: "len", arity: 2, run: cmdSlowlogLen, summary: "Returns the number of slow-log entries"},
			{name: "reset", arity: 2, run: cmdSlowlogReset, summary: "Empties the slow log"},
			{name: "help", arity: 2, run: func(s *Server, c *client, _ [][]byte) { writeHelp(c, slowlogCommands()[0]) }, summary: "Lists SLOWLOG's subcommands"},
		}},
		{name: "latency", arity: -2, group: "server", summary: "The latency monitor", subs: []command{
			{name: "latest", arity: 2, run: cmdLatencyLatest, summary: "Returns the latest and largest spike of each event"},
			{name: "reset", arity: -2, run: cmdLatencyReset, summary: "Forgets the spikes"},
			{name: "help", arity: 2, run: func(s *Server, c *client, _ [][]byte) { writeHelp(c, slowlogCommands()[1]) }, summary: "Lists LATENCY's subcommands"},
		}},
	}
}

func cmdSlowlogGet(s *Server, c *client, args [][]byte) {
	n := int64(10)
	if len(args) > 2 {
		v, ok := parseInt(args[2])
		if !ok || v < -1 || len(args) > 3 {
			c.conn.WriteError("ERR count should be greater than or equal to -1")
			return
		}
		n = v
	}
	es := s.slow.Entries(n)
	c.conn.WriteArray(len(es))
	for _, e := range es {
		c.conn.WriteArray(6)
		c.conn.WriteInt64(e.ID)
		c.conn.WriteInt64(e.At)
		c.conn.WriteInt64(e.Usec)
		c.conn.WriteArray(len(e.Args))
		for _, a := range e.Args {
			c.conn.WriteBulkString(a)
		}
		c.conn.WriteBulkString(e.Addr)
		c.conn.WriteBulkString(e.Name)
	}
}

func cmdSlowlogLen(s *Server, c *client, args [][]byte) {
	c.conn.WriteInt(s.slow.Len())
}

func cmdSlowlogReset(s *Server, c *client, args [][]byte) {
	s.slow.Reset()
	c.conn.WriteString("OK")
}

// cmdLatencyLatest replies as Redis does: one entry per event that spiked,
// [name, unix time, latest ms, max ms]. rlstore has one event, "command".
func cmdLatencyLatest(s *Server, c *client, args [][]byte) {
	e := s.slow.Latest()
	if e.At == 0 {
		c.conn.WriteArray(0)
		return
	}
	c.conn.WriteArray(1)
	c.conn.WriteArray(4)
	c.conn.WriteBulkString("command")
	c.conn.WriteInt64(e.At)
	c.conn.WriteInt64(e.LatestMs)
	c.conn.WriteInt64(e.MaxMs)
}

func cmdLatencyReset(s *Server, c *client, args [][]byte) {
	c.conn.WriteInt(s.slow.ResetLatency())
}

// slowlogParams are the CONFIG parameters of the slow log and latency monitor.
func slowlogParams() []configParam {
	return []configParam{
		{name: "slowlog-log-slower-than", get: getSlowerThan, check: checkIntAtLeast(-1), set: setSlowerThan},
		{name: "slowlog-max-len", get: func(s *Server) string { return strconv.FormatInt(s.slow.MaxLen.Load(), 10) },
			check: checkIntAtLeast(0), set: func(s *Server, v []byte) { n, _ := parseInt(v); s.slow.MaxLen.Store(n) }},
		{name: "latency-monitor-threshold", get: func(s *Server) string { return strconv.FormatInt(s.slow.LatencyMs.Load(), 10) },
			check: checkIntAtLeast(0), set: func(s *Server, v []byte) { n, _ := parseInt(v); s.slow.LatencyMs.Store(n) }},
	}
}

// getSlowerThan shows the threshold in microseconds, as Redis does.
func getSlowerThan(s *Server) string {
	t := s.slow.SlowerThan.Load()
	if t < 0 {
		return "-1"
	}
	return strconv.FormatInt(t/int64(time.Microsecond), 10)
}

func setSlowerThan(s *Server, v []byte) {
	n, _ := parseInt(v)
	s.slow.SlowerThan.Store(max(n*int64(time.Microsecond), -1))
}

func checkIntAtLeast(lo int64) func(v []byte) string {
	return func(v []byte) string {
		n, ok := parseInt(v)
		if !ok || n < lo {
			return "argument must be an integer of at least " + strings.TrimSpace(strconv.FormatInt(lo, 10))
		}
		return ""
	}
}
