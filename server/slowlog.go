package server

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The defaults of the slow log and the latency monitor, as redis-server's.
const (
	DefaultSlowlogSlowerThan = 10 * time.Millisecond
	DefaultSlowlogMaxLen     = 128
)

// Redis's bounds on what a slow-log entry keeps of a command.
const (
	slowlogMaxArgs    = 32
	slowlogMaxArgSize = 128
)

// slowEntry is one SLOWLOG GET entry.
type slowEntry struct {
	id         int64
	at         int64 // unix seconds
	usec       int64
	args       []string
	addr, name string
}

// slowlog keeps the slowest commands' entries, newest first, and the
// latency monitor's spikes. Only a command slower than the threshold takes
// its lock, so the fast path is two atomic loads.
type slowlog struct {
	slowerThan atomic.Int64 // nanoseconds; < 0 disables the log, 0 logs every command
	maxLen     atomic.Int64
	latencyMs  atomic.Int64 // latency monitor threshold in ms; 0 disables it

	mu      sync.Mutex  // guards the fields below
	entries []slowEntry // newest first
	nextID  int64
	latest  latencyEvent
}

// latencyEvent is the latency monitor's one event, "command", as LATENCY LATEST shows it.
type latencyEvent struct {
	at, latestMs, maxMs int64
}

// record logs a command that took d, if it is slow enough.
func (sl *slowlog) record(c *client, args [][]byte, d time.Duration) {
	if t := sl.slowerThan.Load(); t >= 0 && int64(d) >= t {
		sl.add(c, args, d.Microseconds())
	}
	if t := sl.latencyMs.Load(); t > 0 && d.Milliseconds() >= t {
		sl.spike(d.Milliseconds())
	}
}

func (sl *slowlog) add(c *client, args [][]byte, us int64) {
	e := slowEntry{at: time.Now().Unix(), usec: us, args: slowArgs(args), addr: c.addr, name: c.getMeta().name}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	e.id = sl.nextID
	sl.nextID++
	n := int(min(sl.maxLen.Load(), int64(1<<20)))
	sl.entries = append([]slowEntry{e}, sl.entries[:min(len(sl.entries), max(n-1, 0))]...)
	if n == 0 {
		sl.entries = sl.entries[:0]
	}
}

func (sl *slowlog) spike(ms int64) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.latest = latencyEvent{at: time.Now().Unix(), latestMs: ms, maxMs: max(sl.latest.maxMs, ms)}
}

// slowArgs copies what Redis keeps of a command: 32 arguments, each cut at
// 128 bytes, with the rest summarised. AUTH, HELLO and CONFIG keep only
// their name, since their arguments may be passwords.
func slowArgs(args [][]byte) []string {
	if equalFoldASCII(args[0], "auth") || equalFoldASCII(args[0], "hello") ||
		equalFoldASCII(args[0], "config") || equalFoldASCII(args[0], "acl") || isPeerCommand(args[0]) {
		return []string{string(args[0]), "(redacted)"}
	}
	n := min(len(args), slowlogMaxArgs)
	out := make([]string, 0, n)
	for i, a := range args[:n] {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			out = append(out, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
			break
		}
		if len(a) > slowlogMaxArgSize {
			out = append(out, string(a[:slowlogMaxArgSize])+"... ("+strconv.Itoa(len(a)-slowlogMaxArgSize)+" more bytes)")
			continue
		}
		out = append(out, string(a))
	}
	return out
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
	s.slow.mu.Lock()
	es := s.slow.entries
	if n >= 0 && int(n) < len(es) {
		es = es[:n]
	}
	es = append([]slowEntry(nil), es...)
	s.slow.mu.Unlock()
	c.conn.WriteArray(len(es))
	for _, e := range es {
		c.conn.WriteArray(6)
		c.conn.WriteInt64(e.id)
		c.conn.WriteInt64(e.at)
		c.conn.WriteInt64(e.usec)
		c.conn.WriteArray(len(e.args))
		for _, a := range e.args {
			c.conn.WriteBulkString(a)
		}
		c.conn.WriteBulkString(e.addr)
		c.conn.WriteBulkString(e.name)
	}
}

func cmdSlowlogLen(s *Server, c *client, args [][]byte) {
	s.slow.mu.Lock()
	n := len(s.slow.entries)
	s.slow.mu.Unlock()
	c.conn.WriteInt(n)
}

func cmdSlowlogReset(s *Server, c *client, args [][]byte) {
	s.slow.mu.Lock()
	s.slow.entries = nil
	s.slow.mu.Unlock()
	c.conn.WriteString("OK")
}

// cmdLatencyLatest replies as Redis does: one entry per event that spiked,
// [name, unix time, latest ms, max ms]. rlstore has one event, "command".
func cmdLatencyLatest(s *Server, c *client, args [][]byte) {
	s.slow.mu.Lock()
	e := s.slow.latest
	s.slow.mu.Unlock()
	if e.at == 0 {
		c.conn.WriteArray(0)
		return
	}
	c.conn.WriteArray(1)
	c.conn.WriteArray(4)
	c.conn.WriteBulkString("command")
	c.conn.WriteInt64(e.at)
	c.conn.WriteInt64(e.latestMs)
	c.conn.WriteInt64(e.maxMs)
}

func cmdLatencyReset(s *Server, c *client, args [][]byte) {
	s.slow.mu.Lock()
	n := 0
	if s.slow.latest.at != 0 {
		n = 1
	}
	s.slow.latest = latencyEvent{}
	s.slow.mu.Unlock()
	c.conn.WriteInt(n)
}

// slowlogParams are the CONFIG parameters of the slow log and latency monitor.
func slowlogParams() []configParam {
	return []configParam{
		{name: "slowlog-log-slower-than", get: getSlowerThan, check: checkIntAtLeast(-1), set: setSlowerThan},
		{name: "slowlog-max-len", get: func(s *Server) string { return strconv.FormatInt(s.slow.maxLen.Load(), 10) },
			check: checkIntAtLeast(0), set: func(s *Server, v []byte) { n, _ := parseInt(v); s.slow.maxLen.Store(n) }},
		{name: "latency-monitor-threshold", get: func(s *Server) string { return strconv.FormatInt(s.slow.latencyMs.Load(), 10) },
			check: checkIntAtLeast(0), set: func(s *Server, v []byte) { n, _ := parseInt(v); s.slow.latencyMs.Store(n) }},
	}
}

// getSlowerThan shows the threshold in microseconds, as Redis does.
func getSlowerThan(s *Server) string {
	t := s.slow.slowerThan.Load()
	if t < 0 {
		return "-1"
	}
	return strconv.FormatInt(t/int64(time.Microsecond), 10)
}

func setSlowerThan(s *Server, v []byte) {
	n, _ := parseInt(v)
	s.slow.slowerThan.Store(max(n*int64(time.Microsecond), -1))
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
