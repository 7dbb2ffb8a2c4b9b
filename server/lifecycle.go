package server

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/durable"
)

// saveMode says whether a stop saves the store.
type saveMode uint8

const (
	saveIfConfigured saveMode = iota // when Config.Durability is set
	saveNever                        // SHUTDOWN NOSAVE
)

// Shutdown stops the server gracefully. A cluster node first leaves the
// cluster (ClusterConfig.Leave). New clients are then refused. Each
// connected client has every request the server has read answered,
// and those already in its socket, then is closed between two requests,
// without waiting for more: a client under steady load never pauses. Once
// none is left, the sweep stops, a snapshot is taken if Config.Durability
// is set, and Serve returns.
//
// A client that never pauses is cut off, between two requests, once three
// quarters of the time to ctx's deadline has passed, so that the replies to
// what it sent before go out. If ctx ends before every client has gone, the
// rest are closed at once and Shutdown returns ctx's error; replies they
// have not yet been sent are lost.
func (s *Server) Shutdown(ctx context.Context) error {
	return s.shutdown(ctx, saveIfConfigured)
}

func (s *Server) shutdown(ctx context.Context, mode saveMode) error {
	if !s.claimStop() {
		return s.waitStopped(ctx)
	}
	start := time.Now()
	if cc := s.cfg.Cluster; cc != nil && cc.Leave != nil {
		s.log.Info("shutting down: leaving the cluster")
		cc.Leave()
	}
	s.log.Info("shutting down: draining clients")
	err := s.drain(ctx)
	s.stopSweep()
	if mode == saveIfConfigured && s.cfg.Durability != nil {
		err = errors.Join(err, s.dur.Snapshot())
	}
	s.finishStop(err)
	s.log.Info("shut down", "took", time.Since(start).Round(time.Millisecond), "err", err)
	return err
}

// Close stops the server at once: it closes the listener and every
// connection, whatever they are doing, and does not save.
func (s *Server) Close() error {
	first := s.claimStop()
	if ln := s.listener(); ln != nil {
		ln.ForceClose()
		ln.Finish()
	}
	if first {
		s.stopSweep()
		s.finishStop(nil)
		s.log.Info("closed")
	}
	return nil
}

// claimStop reports whether this call is the one that stops the server.
func (s *Server) claimStop() bool {
	s.life.Lock()
	defer s.life.Unlock()
	first := !s.stopping
	s.stopping = true
	return first
}

// waitStopped waits for a stop begun elsewhere; if ctx ends first, it forces it.
func (s *Server) waitStopped(ctx context.Context) error {
	select {
	case <-s.done:
		return s.stopErr
	case <-ctx.Done():
		if ln := s.listener(); ln != nil {
			ln.ForceClose()
		}
		return ctx.Err()
	}
}

// drain drains every connection, or closes those left when ctx ends.
func (s *Server) drain(ctx context.Context) error {
	ln := s.listener()
	if ln == nil {
		return nil // never served
	}
	ln.Drain(drainEnd(ctx))
	select {
	case <-ln.Drained():
		return nil
	case <-ctx.Done():
		ln.ForceClose()
		return ctx.Err()
	}
}

// drainEnd is when a drain stops reading new requests: three quarters of the
// way to ctx's deadline, leaving the last quarter for the replies. Zero if none.
func drainEnd(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Time{}
	}
	now := time.Now()
	return now.Add(d.Sub(now) * 3 / 4)
}

func (s *Server) stopSweep() {
	s.life.Lock()
	end := s.sweepEnd
	s.sweepEnd = nil
	s.life.Unlock()
	if end != nil {
		end()
	}
}

// finishStop records the stop's error and lets Serve return.
func (s *Server) finishStop(err error) {
	s.stopErr = err
	if ln := s.listener(); ln != nil {
		ln.Finish()
	}
	close(s.done)
}

// startSweep runs the store's sweep of expired keys in the background,
// every SweepInterval, at the pace sweepPace sets. The returned func stops it.
func (s *Server) startSweep() func() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.sweepLoop(ctx)
	}()
	return func() { cancel(); <-done }
}

func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	pace := sweepPace{max: s.cfg.SweepBudget, perSecond: int(time.Second / s.cfg.SweepInterval)}
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.info.ops.Sample(now, s.commandsProcessed()) // INFO's instantaneous_ops_per_sec, at Redis's hz
			budget := pace.budget(s.cfg.Store.Len())
			pace.swept(budget, s.cfg.Store.Sweep(s.unixNano(), budget))
		}
	}
}

// sweepPace picks how many slots each sweep visits. A sweep that visits
// SweepBudget slots ten times a second went over a node of 33k keys every
// 0.2 s with nothing to free, 2.4% of a core (pprof, under load through a
// 3-node cluster), paid by every node. So, as Redis's expiry cycle does, it
// slows down while sweeps find little: each visits about a second's share
// of the keys, never fewer than minSweep slots, so that every key is
// looked at about once a second. While more than one visit in ten frees a
// key, each sweep visits SweepBudget slots, until it catches up.
type sweepPace struct {
	max       int  // SweepBudget: the most one sweep visits
	perSecond int  // sweeps a second
	busy      bool // the last sweep freed more than one slot in ten visited
}

// minSweep is the fewest slots a sweep visits: below it, a sweep costs
// little whatever it visits.
const minSweep = 1024

// budget is the slots the next sweep visits, for a store of keys keys.
func (p *sweepPace) budget(keys int64) int {
	if p.busy {
		return p.max
	}
	share := keys / int64(max(p.perSecond, 1))
	return int(min(int64(p.max), max(share, minSweep)))
}

// swept notes that a sweep of budget slots freed freed keys.
func (p *sweepPace) swept(budget, freed int) {
	p.busy = freed*10 > budget
}

// serverCommands are the commands about the server as a whole.
func serverCommands() []command {
	return []command{
		{name: "time", arity: 1, run: cmdTime, group: "server", summary: "Returns the server's clock: seconds and microseconds"},
		{name: "shutdown", arity: -1, flags: core.FlagAdmin | core.FlagNoTx, run: cmdShutdown, group: "server", summary: "Drains clients, saves if configured, and stops the server"},
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
	s.log.Info("SHUTDOWN by a client", "client", c.ID, "addr", c.Addr)
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
