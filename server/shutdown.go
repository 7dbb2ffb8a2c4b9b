package server

import (
	"context"
	"errors"
	"time"
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
	if s.cl != nil && s.cl.cfg.Leave != nil {
		s.log.Info("shutting down: leaving the cluster")
		s.cl.cfg.Leave()
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
