package server

import (
	"context"
	"strconv"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/durable"
)

// serverCommands are the commands about the server as a whole.
func serverCommands() []command {
	return []command{
		{name: "time", arity: 1, run: cmdTime, group: "server", summary: "Returns the server's clock: seconds and microseconds"},
		{name: "shutdown", arity: -1, flags: flagAdmin | flagNoTx, run: cmdShutdown, group: "server", summary: "Drains clients, saves if configured, and stops the server"},
		{name: "info", arity: -1, run: cmdInfo, group: "server", summary: "Describes the server"},
		{name: "config", arity: -2, secret: core.HideNone, group: "server", summary: "Reads and changes the configuration", subs: configSubcommands()},
	}
}

// cmdTime reads the clock decisions use, so that clients see the time limits are computed at.
func cmdTime(s *Server, c *client, args [][]byte) {
	now := s.cfg.Clock()
	c.conn.WriteArray(2)
	c.conn.WriteBulkString(strconv.FormatInt(now.Unix(), 10))
	c.conn.WriteBulkString(strconv.Itoa(now.Nanosecond() / 1000))
}

// cmdShutdown is SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]. It closes this
// connection without a reply, as Redis does, and stops the server as
// Shutdown does, allowing Config.ShutdownTimeout for the drain; a cluster
// node hands its slots over first, as on SIGTERM. NOW and FORCE are
// accepted and change nothing.
//
// NOSAVE skips the snapshot only. As Redis still fsyncs its AOF, the log is
// still written and fsynced when cmd/rlstore closes the store, so nothing
// acknowledged is lost; the next start just replays more log.
func cmdShutdown(s *Server, c *client, args [][]byte) {
	mode, reply := parseShutdown(args[1:], s.cfg.Durability != nil)
	if reply != "" {
		c.conn.WriteError(reply)
		return
	}
	s.log.Info("SHUTDOWN by a client", "client", c.id, "addr", c.addr)
	s.closeAfterReply(c)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
		defer cancel()
		_ = s.shutdown(ctx, mode) // logs its own outcome
	}()
}

// parseShutdown reads SHUTDOWN's options. As in Redis 7, SAVE and NOSAVE
// together are a syntax error rather than one silently winning.
func parseShutdown(opts [][]byte, canSave bool) (saveMode, string) {
	mode, save := saveIfConfigured, false
	for _, o := range opts {
		switch {
		case equalFoldASCII(o, "nosave"):
			mode = saveNever
		case equalFoldASCII(o, "save"):
			save = true
		case equalFoldASCII(o, "now"), equalFoldASCII(o, "force"):
		case equalFoldASCII(o, "abort"):
			return mode, "ERR No shutdown in progress."
		default:
			return mode, errSyntax
		}
	}
	switch {
	case save && mode == saveNever:
		return mode, errSyntax
	case save && !canSave:
		return mode, durable.ErrNoPersistence
	}
	return mode, ""
}
