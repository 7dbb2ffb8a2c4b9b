package server

import (
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// DEBUG, which exists only when Config.EnableDebugCommand allows it (Redis
// has it always and refuses it by default; here the default command table
// stays as it is). Its one use is DEBUG SET-CLOCK, which lets a test that
// replays recorded traffic (integrations/) decide every request at the
// instant it was recorded at, so replies with times in them come out the
// same byte for byte. Anyone who may run it can reset every key's window,
// which is why it is off by default and, with "local", loopback only, as
// redis.conf's enable-debug-command.

// The values of Config.EnableDebugCommand, as redis.conf's enable-debug-command.
const (
	DebugNo    = "no" // the default: there is no DEBUG command
	DebugYes   = "yes"
	DebugLocal = "local" // from loopback connections only
)

const errDebugNotAllowed = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

// debugClock is the server's clock while DEBUG is enabled: the configured
// clock, or the instant DEBUG SET-CLOCK stopped it at.
type debugClock struct {
	base func() time.Time
	at   atomic.Int64 // unix nanoseconds the clock stands at; 0: base runs
}

func (d *debugClock) now() time.Time {
	if ns := d.at.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return d.base()
}

// withDebug validates cfg.EnableDebugCommand and, if DEBUG is enabled,
// puts a settable clock in front of cfg.Clock (nil: time.Now).
func withDebug(cfg *Config) (*debugClock, error) {
	switch cfg.EnableDebugCommand {
	case "", DebugNo:
		cfg.EnableDebugCommand = DebugNo
		return nil, nil
	case DebugYes, DebugLocal:
	default:
		return nil, errors.New("server: EnableDebugCommand must be no, yes or local")
	}
	d := &debugClock{base: cfg.Clock}
	if d.base == nil {
		d.base = time.Now
	}
	cfg.Clock = d.now
	return d, nil
}

// debugCommands is DEBUG, registered only when it is enabled.
func debugCommands() []command {
	return []command{
		{name: "debug", arity: -2, flags: flagAdmin | flagNoTx, group: "server", summary: "Test facilities (only with enable-debug-command)", subs: []command{
			{name: "set-clock", arity: 3, run: cmdDebugSetClock, summary: "Stops the server's clock at a unix time in nanoseconds; 0 lets it run again"},
			{name: "help", arity: 2, run: cmdDebugHelp, summary: "Lists DEBUG's subcommands"},
		}},
	}
}

func cmdDebugHelp(s *Server, c *client, _ [][]byte) {
	if !s.debugAllowed(c) {
		c.conn.WriteError(errDebugNotAllowed)
		return
	}
	writeHelp(c, debugCommands()[0])
}

// cmdDebugSetClock is DEBUG SET-CLOCK unix-ns. Every later command of
// every client reads the clock at that instant until the next SET-CLOCK;
// the store still clamps a clock set backwards per key, as for a wall
// clock that steps back.
func cmdDebugSetClock(s *Server, c *client, args [][]byte) {
	if !s.debugAllowed(c) {
		c.conn.WriteError(errDebugNotAllowed)
		return
	}
	ns, ok := parseInt(args[2])
	if !ok || ns < 0 {
		c.conn.WriteError(string(errArgNotInt))
		return
	}
	s.debug.at.Store(ns)
	c.conn.WriteString("OK")
}

// debugAllowed reports whether c may run DEBUG: any client with "yes",
// loopback clients with "local".
func (s *Server) debugAllowed(c *client) bool {
	if s.cfg.EnableDebugCommand != DebugLocal {
		return true
	}
	host, _, err := net.SplitHostPort(c.addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
