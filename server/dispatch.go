package server

import (
	"runtime/debug"
	"strings"
	"time"

	"github.com/rlstore/rlstore/server/internal/resp"
)

// maxCommandName bounds the command names dispatch looks up; longer ones are
// unknown. It lets dispatch lower-case a name into a stack buffer.
const maxCommandName = 32

// Replies of dispatch, in Redis's words.
const (
	errNoAuth     = "NOAUTH Authentication required."
	errNotInMulti = "ERR Command not allowed inside a transaction"
	errQueueSize  = "ERR MULTI queue is larger than max-request-bytes"
)

// dispatch checks a command as Redis does, in Redis's order (name, arity,
// then auth), and runs it or queues it for EXEC.
func (s *Server) dispatch(c *client, args [][]byte) {
	cm, reply := s.resolveFor(c, args)
	switch {
	case cm == nil:
		reject(c, reply)
	case !c.authed && cm.flags&flagNoAuth == 0:
		cm.stats.Rejected.Add(1)
		reject(c, errNoAuth)
	case c.user != nil && cm.flags&flagNoAuth == 0 && s.refusedByACL(c, cm, args):
	case c.multi && cm.flags&flagNoQueue == 0:
		s.enqueue(c, cm, args)
	case s.cl == nil, c.multi && cm.firstKey > 0: // in MULTI only flagNoQueue commands get here; the keyed one, WATCH, answers itself
		s.run(c, cm, args)
	case s.routeOne(c, cm, args) && s.obs.active.Load() != 0: // forwarded: MONITOR and CLIENT TRACKING still see it
		s.afterForward(c, cm, args)
	}
}

// run runs cm, counting it for INFO, CLIENT LIST, SLOWLOG and /metrics.
func (s *Server) run(c *client, cm *command, args [][]byte) {
	if c.pend.cm != cm { // another command: the counts so far must show to it (see pending)
		c.pend.flush(s)
	}
	if c.lastCmd.Load() != cm { // a load is a plain read; a store is a locked one
		c.lastCmd.Store(cm)
	}
	c.cmds.Add(1)
	start, errs := c.mark, c.errs
	if start == 0 {
		start = s.batchStart(c)
		c.mark = start
	}
	defer s.ran(c, cm, args, start, errs)
	if s.obs.active.Load() != 0 {
		s.beforeRun(c, cm, args)
	}
	if reply := s.keyTooLong(cm, args); reply != "" {
		c.conn.WriteError(reply)
	} else if cm.flags&flagWrite != 0 && s.cfg.Durability != nil {
		s.runWrite(c, cm, args)
	} else {
		cm.run(s, c, args)
	}
	if s.obs.active.Load() != 0 {
		s.afterRun(c, cm, args)
	}
}

// ran records a run of cm that started at start (s.monotonic): its time,
// and whether it replied with an error (c.errs grew past errs). A deferred
// call costs no allocation, and the counters are atomics of cm's own.
func (s *Server) ran(c *client, cm *command, args [][]byte, start time.Duration, errs int64) {
	end := s.monotonic()
	c.mark = end // the next command of the batch starts where this one ended: one clock read a command
	d := end - start
	c.pend.observe(cm, d)
	if c.errs != errs {
		cm.stats.Failed.Add(1)
	}
	if slow, spiked := s.slow.Slow(d), s.slow.Spiked(d); slow || spiked {
		s.recordSlow(c, cm, args, d, slow, spiked)
	}
}

// refusedByACL refuses cm with -NOPERM, and says so, if c's user may not
// run it on its keys.
func (s *Server) refusedByACL(c *client, cm *command, args [][]byte) bool {
	reply := mayRun(c.user, cm, args)
	if reply == "" {
		return false
	}
	cm.stats.Rejected.Add(1)
	reject(c, reply)
	return true
}

// monotonic is the time since the server was made, from the monotonic
// clock alone: time.Since reads one clock where time.Now reads two, which
// is most of what timing every command costs (measured here: ~50 ns a
// time.Now, 3 reads were +75 ns a pipelined PING).
func (s *Server) monotonic() time.Duration { return time.Since(s.started) }

// reject refuses a command. Inside MULTI that dooms the transaction, as in Redis.
func reject(c *client, reply string) {
	c.conn.WriteError(reply)
	if c.multi {
		c.dirty = true
	}
}

// resolve finds the command or subcommand that args name and checks its
// arity. It returns nil and the error reply if there is none or it does not fit.
func (s *Server) resolve(args [][]byte) (*command, string) {
	cm := s.findCommand(args[0])
	if cm == nil {
		return nil, unknownCommand(args)
	}
	if len(cm.subs) > 0 && len(args) > 1 {
		sub := cm.sub(args[1])
		if sub == nil {
			return nil, "ERR unknown subcommand '" + quoteArg(args[1], 128) +
				"'. Try " + strings.ToUpper(cm.name) + " HELP."
		}
		cm = sub
	}
	if !arityFits(cm.arity, len(args)) {
		cm.stats.Rejected.Add(1)
		return nil, arityError(cm.name)
	}
	return cm, ""
}

// resolveFor is resolve, trying first the command c ran last: a pipeline
// mostly repeats one command, and comparing its name costs less than the
// table lookup. A peer's requests alternate RL.HOP and the command it
// wraps, which is the one counted, so for a peer RL.HOP is tried too.
// Renamed commands are served only under their new names, so then every
// name goes to the table.
func (s *Server) resolveFor(c *client, args [][]byte) (*command, string) {
	if !s.renamed {
		if cm := c.pend.cm; cm != nil && callsFor(cm, args) {
			return cm, ""
		}
		if cm := s.hop; c.peer && cm != nil && callsFor(cm, args) {
			return cm, ""
		}
	}
	return s.resolve(args)
}

// callsFor reports whether args call cm, a command without subcommands, and
// fit its arity.
func callsFor(cm *command, args [][]byte) bool {
	return len(cm.subs) == 0 && arityFits(cm.arity, len(args)) && equalFoldASCII(args[0], cm.name)
}

// findCommand looks name up, ignoring case, without allocating: the
// compiler turns a map index by string(bytes) into a lookup with no copy.
func (s *Server) findCommand(name []byte) *command {
	if len(name) > maxCommandName {
		return nil
	}
	var buf [maxCommandName]byte
	for i, ch := range name {
		buf[i] = lowerASCII(ch)
	}
	return s.commands[string(buf[:len(name)])]
}

func arityFits(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}

// arityError is Redis 7's reply to a wrong argument count. name is the
// command's full lower-case name, such as "rl.slide" or "client|setname".
func arityError(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// unknownCommand words the reply to an unknown command as Redis 7 does: the
// name, then the arguments quoted, until 128 bytes of them have been shown.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '" + quoteArg(args[0], 128) + "', with args beginning with: ")
	shown := 0
	for _, a := range args[1:] {
		if shown >= 128 {
			break
		}
		q := "'" + quoteArg(a, 128-shown) + "' "
		shown += len(q)
		b.WriteString(q)
	}
	return b.String()
}

// quoteArg returns at most n bytes of a, with CR and LF turned into spaces
// so that the error stays on one line, as Redis's rejectCommandFormat does.
func quoteArg(a []byte, n int) string {
	b := append([]byte(nil), a[:min(len(a), max(n, 0))]...) // a copy: a belongs to the request
	for i, ch := range b {
		if ch == '\r' || ch == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}

// enqueue queues a command for EXEC. The queue is capped like a request:
// otherwise a client could queue without limit. Each argument counts with
// its smallest framing, as in the request, so that empty arguments, which
// the server holds a copy and a slice header of, count too.
func (s *Server) enqueue(c *client, cm *command, args [][]byte) {
	size := int64(0)
	for _, a := range args {
		size += resp.MinBulk + int64(len(a))
	}
	switch {
	case cm.flags&flagNoTx != 0:
		reject(c, errNotInMulti)
	case c.qbytes+size > s.cfg.MaxRequestBytes:
		reject(c, errQueueSize)
	default:
		c.queue = append(c.queue, queued{cmd: cm, args: cloneArgs(args)})
		c.qbytes += size
		c.qlen.Store(int32(len(c.queue)))
		c.conn.WriteString("QUEUED")
	}
}

// recoverPanic turns a command's panic into an error reply. The connection
// is closed after it, because the command may have written part of a reply
// that cannot be taken back; every other client is served on.
func (s *Server) recoverPanic(c *client, args [][]byte) {
	r := recover()
	if r == nil {
		return
	}
	name := quoteArg(args[0], maxCommandName)
	s.log.Error("command panicked; closing its connection",
		"client", c.id, "addr", c.addr, "cmd", name, "panic", r, "stack", string(debug.Stack()))
	c.conn.WriteError("ERR internal error running '" + name + "', closing the connection; see the server log")
	s.closeAfterReply(c)
}
