package debugcmd

import (
	"net"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
)

// ErrNotAllowed is DEBUG's reply to a client that may not run it, in Redis's words.
const ErrNotAllowed = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server."

// Clock is the server's clock while DEBUG is enabled: the configured
// clock, or the instant DEBUG SET-CLOCK stopped it at. Safe for
// concurrent use.
type Clock struct {
	base func() time.Time
	at   atomic.Int64 // unix nanoseconds the clock stands at; 0: base runs
}

// NewClock returns a Clock that runs as base until DEBUG SET-CLOCK stops it.
func NewClock(base func() time.Time) *Clock { return &Clock{base: base} }

// Now is the clock's time: base's, or where SET-CLOCK stopped it.
func (d *Clock) Now() time.Time {
	if ns := d.at.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return d.base()
}

// Debug is the DEBUG command over a Clock.
type Debug struct {
	clock     *Clock
	localOnly bool // enable-debug-command local: loopback clients only (the session's Addr)
}

// New returns DEBUG over clock, for loopback clients only if localOnly.
func New(clock *Clock, localOnly bool) *Debug {
	return &Debug{clock: clock, localOnly: localOnly}
}

// Commands is DEBUG, as a table entry; the server registers it only when it is enabled.
func (g *Debug) Commands() []core.Command {
	return []core.Command{
		{Name: "debug", Arity: -2, Flags: core.FlagAdmin | core.FlagNoTx, Group: "server", Summary: "Test facilities (only with enable-debug-command)", Subs: []core.Command{
			{Name: "set-clock", Arity: 3, Run: g.setClock, Summary: "Stops the server's clock at a unix time in nanoseconds; 0 lets it run again"},
			{Name: "help", Arity: 2, Run: g.help, Summary: "Lists DEBUG's subcommands"},
		}},
	}
}

func (g *Debug) help(x *core.Session, _ [][]byte) {
	if !g.allowed(x) {
		x.Out.WriteError(ErrNotAllowed)
		return
	}
	core.WriteHelp(x, &g.Commands()[0])
}

// setClock is DEBUG SET-CLOCK unix-ns. Every later command of every client
// reads the clock at that instant until the next SET-CLOCK; the store
// still clamps a clock set backwards per key, as for a wall clock that
// steps back.
func (g *Debug) setClock(x *core.Session, args [][]byte) {
	if !g.allowed(x) {
		x.Out.WriteError(ErrNotAllowed)
		return
	}
	ns, ok := policy.ParseInt(args[2])
	if !ok || ns < 0 {
		x.Out.WriteError(string(policy.ErrNotInt))
		return
	}
	g.clock.at.Store(ns)
	x.Out.WriteString("OK")
}

func (g *Debug) allowed(x *core.Session) bool { return !g.localOnly || Local(x.Addr) }

// Local reports whether addr, a client's host:port, is a loopback address.
func Local(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
