package server

import (
	"errors"
	"net"
	"os"
	"time"

	"github.com/rlstore/rlstore/internal/wire"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/inproc"
	"github.com/rlstore/rlstore/server/internal/resp"
)

// errOutputLimit ends a connection whose replies passed the output limit.
var errOutputLimit = errors.New("server: client output limit reached")

// acceptLoop serves each admitted connection on its own goroutine until the
// listener is finished.
func (s *Server) acceptLoop(ln *resp.Listener) {
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		go s.serveConn(nc.(*resp.Guard))
	}
}

// serveConn serves one client until its connection ends.
func (s *Server) serveConn(g *resp.Guard) {
	rc := resp.NewConn(g, s.cfg.MaxRequestBytes, s.cfg.ClientOutputLimit, s.mem)
	c := s.newClient(rc, g)
	err := s.loop(c, rc)
	s.forget(c, err)
}

// loop is the connection's life. A batch is every whole request that one
// read brought in: each runs in order, its reply appended to the batch's;
// then the batch is committed (see durable.Writes.Commit) and its replies go out in
// one write, which waits while the client's socket is full, so a client
// that does not read its replies stops being read. Between batches a
// socket's connection stays in one wait for its reads (see stay), and
// comes back here for what that wait leaves to fill: a drain, a deadline.
func (s *Server) loop(c *client, rc *resp.Conn) error {
	b := &batcher{s: s, c: c, rc: rc}
	for {
		if err := rc.Fill(); err != nil {
			return err
		}
		if b.run(); b.done {
			return b.err
		}
		if rc.Guard().Raw() == nil {
			continue
		}
		err := rc.Guard().Raw().Stay(b)
		switch {
		case b.done:
			return b.err
		case err != nil && !errors.Is(err, os.ErrDeadlineExceeded): // a deadline is a drain's: fill's to handle
			return err
		}
	}
}

// batch runs every whole request the buffer holds, then ends the batch.
// done says the connection ends, with err as the reason (nil: it closed
// cleanly); a partial request is left for the next read.
func (s *Server) batch(c *client, rc *resp.Conn) (done bool, err error) {
	rc.SetPreAuth(!c.Authed) // before Prefetch parses ahead
	s.readAt(c)
	s.dec.Prefetch(&c.dec, c.Conn)
	for {
		rc.SetPreAuth(!c.Authed)
		args, err := rc.Command()
		switch {
		case err != nil:
			return true, s.refuse(c, rc, err)
		case args == nil:
			c.Mark = 0 // the wait for the next batch is no command's time
			if err := s.endBatch(c, rc); err != nil {
				return true, err
			}
			return false, nil
		}
		c.Ahead = c.dec.AheadCommand(rc)
		s.handle(c, args)
		s.dec.PrefetchNext(&c.dec, c.Conn)
		switch {
		case rc.Over():
			return true, errOutputLimit
		case rc.Closing():
			rc.DropPipeline()
			if err := s.endBatch(c, rc); err != nil {
				return true, err
			}
			rc.WaitBox(0, 0) // the replies a Later still owes go out before the close
			rc.WaitWrites()
			return true, nil
		}
	}
}

// readAt notes that c's requests arrived now, with one clock read that
// serves both CLIENT LIST's idle= and the start of the batch's first
// command (see Server.run): without pipelining every clock read is paid
// once a request.
func (s *Server) readAt(c *client) {
	now := s.monotonic()
	c.Mark = now
	c.g.Last.Store(s.started.UnixNano() + int64(now))
}

// handle runs one command, recovering from its panic.
func (s *Server) handle(c *client, args [][]byte) {
	defer s.recoverPanic(c, args)
	s.pipe.Dispatch(&c.Session, args)
}

// endBatch commits the batch, writes its replies, and waits while too many
// replies are held behind an unfinished Later.
func (s *Server) endBatch(c *client, rc *resp.Conn) error {
	s.flushPending(c) // before the replies: whoever sees one sees it counted
	if s.ho != nil {
		s.rt.EndBatch(&c.Session)
	}
	if s.cfg.Durability != nil {
		s.dur.Commit(&c.dur)
	}
	err := rc.FlushBatch()
	rc.Released()
	if err != nil {
		return err
	}
	c.Conn.PushesFlushed()
	if !rc.WaitBox(resp.HoldReplies, resp.HoldBytes) {
		return net.ErrClosed
	}
	return nil
}

// refuse answers the requests before a malformed one, then replies to it
// with the protocol error and ends the connection, as Redis does.
func (s *Server) refuse(c *client, rc *resp.Conn, perr error) error {
	if err := s.endBatch(c, rc); err != nil {
		return err
	}
	rc.WriteError("ERR " + perr.Error())
	_ = rc.Flush()
	return perr
}

// newClient registers the client of a connection the listener admitted.
func (s *Server) newClient(rc *resp.Conn, g *resp.Guard) *client {
	c := &client{conn: rc, g: g}
	c.ID, c.Conn, c.Created = s.clients.NewID(), rc, time.Now()
	c.Addr, c.LAddr = g.RemoteAddr().String(), g.LocalAddr().String()
	c.Proto = 2
	s.users.Open(&c.Session, c.Addr)
	s.obs.Open(&c.ob, &c.Session, rc, c.ID, c.Addr)
	s.dec.Open(&c.Session, &c.dec, rc)
	s.rt.Open(&c.Session, &c.rt)
	s.clientSlot.Set(&c.Session, c)
	c.SetMeta(func(m *core.Meta) { m.Resp = 2 })
	c.QLen.Store(-1)
	if s.cfg.Durability != nil {
		c.conn = s.dur.Open(&c.dur, &c.Session, rc, c.ID, g.Close, func(cm *core.Command, args [][]byte) { s.call(c, cm, args) })
	}
	c.conn = errCounter{clientConn: c.conn, c: c, stats: &s.info.errors}
	c.Out = c.conn
	s.clients.Add(&c.Session)
	return c
}

// forget closes a connection that has ended and forgets its client.
func (s *Server) forget(c *client, err error) {
	_ = c.g.Close()
	c.Conn.Released()
	s.clients.Remove(&c.Session)
	s.flushPending(c)
	s.obs.Forget(&c.ob)
	var perr wire.ProtocolError
	switch {
	case errors.As(err, &perr): // at debug, as Redis logs these at verbose: a client could flood the log
		s.protoErrors.Add(1)
		s.log.Debug("client sent a bad request; closed", "client", c.ID, "addr", c.Addr, "err", err)
	case errors.Is(err, errOutputLimit) && c.Conn.Evicted(): // evictLargest logged it
	case errors.Is(err, errOutputLimit):
		s.outputLimitClosed.Add(1)
		s.log.Warn("client closed: its replies passed the output limit (--client-output-limit)",
			"client", c.ID, "addr", c.Addr, "limit", s.cfg.ClientOutputLimit)
	}
	if ln := s.listener(); ln != nil {
		ln.Remove(c.g) // last: a drain is over once every client is forgotten
	}
}

// Gateway decides the gRPC gateway's batches (gateway/batch.Decider) as
// pipelined decision commands of clients of the server's own, on
// in-memory connections; see inproc.Gateway.
type Gateway = inproc.Gateway

// Gateway returns a decider for the gRPC gateway with at most maxConns
// connections (one per batch under way); Close it before the server.
func (s *Server) Gateway(maxConns int) *Gateway { return inproc.New(maxConns, gatewayDelegate{s}) }

// gatewayDelegate is the server as the gateway's inproc.Delegate.
type gatewayDelegate struct{ s *Server }

// ServeConn serves the gateway's client on conn as the listener's are
// served, logged in as the default user with no ACL restriction.
func (d gatewayDelegate) ServeConn(conn net.Conn) {
	s := d.s
	gc := resp.NewGuard(conn)
	rc := resp.NewConn(gc, s.cfg.MaxRequestBytes, s.cfg.ClientOutputLimit, s.mem)
	c := s.newClient(rc, gc)
	s.users.Login(&c.Session, nil)
	c.SetMeta(func(m *core.Meta) { m.Name = "gateway" })
	go func() {
		err := s.loop(c, rc)
		s.forget(c, err)
	}()
}

// batcher runs a connection's batches for resp.RawReader.Stay, which reads them
// without leaving its wait for the socket between one batch and the next.
type batcher struct {
	s    *Server
	c    *client
	rc   *resp.Conn
	done bool  // the connection ends
	err  error // why, if done; nil: it closed cleanly
}

// run runs the batch the buffer holds.
func (b *batcher) run() { b.done, b.err = b.s.batch(b.c, b.rc) }

// Room is where the next read goes.
func (b *batcher) Room() []byte {
	return b.rc.Room()
}

// Got runs what a read of n bytes into Room brought in, and reports
// whether the connection goes on.
func (b *batcher) Got(n int) bool {
	b.rc.Filled(n)
	b.run()
	return !b.done
}

// Next reports whether Stay may go on reading: not while the server
// drains and the connection stands between requests, which loop's read
// handles (see resp.Guard), even for a client whose requests always
// fill the buffer.
func (b *batcher) Next() bool { return !b.rc.Guard().PrepareRead(b.rc.Idle()) }
