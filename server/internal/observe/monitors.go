package observe

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// MonitorCommands is MONITOR, the stream of every command the server runs.
func (o *Observers) MonitorCommands() []core.Command {
	return []core.Command{{Name: "monitor", Arity: 1, Flags: core.FlagAdmin | core.FlagNoTx, Run: o.with(o.monitor),
		Group: "server", Summary: "Streams every command the server runs, AUTH's arguments redacted"}}
}

// monitor makes c a monitor. As in Redis 7, it is then sent each command
// after it ran, except administrative ones, with AUTH's and HELLO AUTH's
// arguments redacted; it may still send commands of its own.
func (o *Observers) monitor(c *Client, args [][]byte) {
	c.x.Out.WriteString("OK")
	if c.track.monitor {
		return
	}
	c.track.monitor = true
	c.monitoring.Store(true)
	c.rc.HoldPushes() // lines wait for the +OK
	c.track.held = true
	o.mu.Lock()
	initMaps(o)
	o.monitors[c.id] = c
	o.mu.Unlock()
	o.active.Add(1)
}

// feedMonitors sends every monitor c's call of cm as Redis words it
// (observe.MonitorLine), hiding the arguments cm declares secret.
func (o *Observers) feedMonitors(c *Client, cm *core.Command, args [][]byte) {
	o.mu.Lock()
	if len(o.monitors) == 0 {
		o.mu.Unlock()
		return
	}
	mons := make([]*Client, 0, len(o.monitors))
	for _, m := range o.monitors {
		mons = append(mons, m)
	}
	o.mu.Unlock()
	var hide core.Hidden
	if cm.Secret != nil {
		hide = cm.Secret(args)
	}
	line := MonitorLine(time.Now(), c.addr, args, hide)
	for _, m := range mons {
		m.rc.Push(line)
	}
}
