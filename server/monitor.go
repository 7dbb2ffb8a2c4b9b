package server

import (
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/observe"
)

// monitorCommands is MONITOR, the stream of every command the server runs.
func monitorCommands() []command {
	return []command{{name: "monitor", arity: 1, flags: flagAdmin | flagNoTx, run: cmdMonitor,
		group: "server", summary: "Streams every command the server runs, AUTH's arguments redacted"}}
}

// cmdMonitor makes c a monitor. As in Redis 7, it is then sent each command
// after it ran, except administrative ones, with AUTH's and HELLO AUTH's
// arguments redacted; it may still send commands of its own.
func cmdMonitor(s *Server, c *client, args [][]byte) {
	c.conn.WriteString("OK")
	if c.track.monitor {
		return
	}
	c.track.monitor = true
	c.monitoring.Store(true)
	c.rc.HoldPushes() // lines wait for the +OK
	c.track.held = true
	o := &s.obs
	o.mu.Lock()
	initMaps(o)
	o.monitors[c.id] = c
	o.mu.Unlock()
	o.active.Add(1)
}

// feedMonitors sends every monitor c's call of cm as Redis words it
// (observe.MonitorLine), hiding the arguments cm declares secret.
func (s *Server) feedMonitors(c *client, cm *core.Command, args [][]byte) {
	o := &s.obs
	o.mu.Lock()
	if len(o.monitors) == 0 {
		o.mu.Unlock()
		return
	}
	mons := make([]*client, 0, len(o.monitors))
	for _, m := range o.monitors {
		mons = append(mons, m)
	}
	o.mu.Unlock()
	var hide core.Hidden
	if cm.Secret != nil {
		hide = cm.Secret(args)
	}
	line := observe.MonitorLine(time.Now(), c.addr, args, hide)
	for _, m := range mons {
		m.rc.Push(line)
	}
}

// secretArgs hides every argument: AUTH's, and the node-to-node commands',
// whose payloads are a handshake's proofs or whole slots' state.
func secretArgs(args [][]byte) core.Hidden { return core.Hidden{From: 1, To: len(args)} }

// secretHelloAuth hides the user and password of HELLO's AUTH, as Redis 7 does.
func secretHelloAuth(args [][]byte) core.Hidden {
	for i := 2; i+2 < len(args); i++ {
		if equalFoldASCII(args[i], "auth") {
			return core.Hidden{From: i + 1, To: i + 3}
		}
	}
	return core.Hidden{}
}

// secretNone hides nothing from MONITOR, for a command only the slow log
// keeps to its name (CONFIG, ACL: MONITOR does not show CONFIG SET, the
// one that takes a password, as it is administrative).
func secretNone([][]byte) core.Hidden { return core.Hidden{} }
