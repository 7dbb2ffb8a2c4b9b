package server

import (
	"strconv"
	"time"
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

// feedMonitors sends every monitor c's command as Redis words it:
// +1700000000.123456 [0 127.0.0.1:5000] "rl.slide" "k" "10" "60"
func (s *Server) feedMonitors(c *client, args [][]byte) {
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
	line := monitorLine(time.Now(), c.addr, args)
	for _, m := range mons {
		m.rc.Push(line)
	}
}

// monitorLine formats one MONITOR line.
func monitorLine(now time.Time, addr string, args [][]byte) []byte {
	b := []byte{'+'}
	b = strconv.AppendInt(b, now.Unix(), 10)
	us := strconv.Itoa(now.Nanosecond()/1000 + 1000000)
	b = append(append(b, '.'), us[1:]...)
	b = append(append(append(b, " [0 "...), addr...), "] "...)
	redact := redactFrom(args)
	for i, a := range args {
		if i > 0 {
			b = append(b, ' ')
		}
		if i >= redact.from && i < redact.to {
			b = append(b, `"(redacted)"`...)
			continue
		}
		b = appendRepr(b, a)
	}
	return append(b, '\r', '\n')
}

// redactFrom returns the arguments that MONITOR hides, as Redis 7 does:
// every argument of AUTH, and the user and password of HELLO's AUTH; and
// every argument of the node-to-node commands, whose payloads are a
// handshake's proofs or whole slots' state.
func redactFrom(args [][]byte) struct{ from, to int } {
	switch {
	case equalFoldASCII(args[0], "auth") || isPeerCommand(args[0]):
		return struct{ from, to int }{1, len(args)}
	case equalFoldASCII(args[0], "hello"):
		for i := 2; i+2 < len(args); i++ {
			if equalFoldASCII(args[i], "auth") {
				return struct{ from, to int }{i + 1, i + 3}
			}
		}
	}
	return struct{ from, to int }{0, 0}
}

// appendRepr quotes a as Redis's sdscatrepr does.
func appendRepr(b, a []byte) []byte {
	b = append(b, '"')
	for _, ch := range a {
		switch ch {
		case '\\', '"':
			b = append(b, '\\', ch)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\a':
			b = append(b, `\a`...)
		case '\b':
			b = append(b, `\b`...)
		default:
			if ch >= ' ' && ch <= '~' {
				b = append(b, ch)
			} else {
				b = append(b, '\\', 'x', "0123456789abcdef"[ch>>4], "0123456789abcdef"[ch&15])
			}
		}
	}
	return append(b, '"')
}
