package proc

import (
	"context"
	"fmt"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// System is a server under test: either one this process started, which it
// can restart for a clean memory reading and whose RSS it reads from /proc,
// or one given by address, read through INFO. It is not safe for concurrent
// use.
type System struct {
	Name  string // "rlstore" or "redis"
	addr  string
	srv   *Server
	start func(context.Context) (*Server, error)
}

// StartSystem starts a server with start and keeps start for restarts.
func StartSystem(ctx context.Context, name string, start func(context.Context) (*Server, error)) (*System, error) {
	s := &System{Name: name, start: start}
	return s, s.Restart(ctx)
}

// AddrSystem is a server someone else runs at addr.
func AddrSystem(name, addr string) *System { return &System{Name: name, addr: addr} }

// Addr returns where the server listens.
func (s *System) Addr() string {
	if s.srv != nil {
		return s.srv.Addr
	}
	return s.addr
}

// PID returns the server's process id, or 0 when it is not ours.
func (s *System) PID() int {
	if s.srv != nil {
		return s.srv.PID()
	}
	return 0
}

// Owned reports whether this process started the server.
func (s *System) Owned() bool { return s.start != nil }

// Restart replaces a server we started with a fresh process; for a server
// given by address it empties it with FLUSHALL instead.
func (s *System) Restart(ctx context.Context) error {
	if s.start == nil {
		return s.Flush(ctx)
	}
	if err := s.Close(); err != nil {
		return err
	}
	srv, err := s.start(ctx)
	if err != nil {
		return fmt.Errorf("loadtest: restart %s: %w", s.Name, err)
	}
	s.srv = srv
	return nil
}

// Flush deletes every key with FLUSHALL.
func (s *System) Flush(ctx context.Context) error {
	cl, err := resp.Dial(ctx, s.Addr())
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = cl.DoOK(ctx, "FLUSHALL")
	return err
}

// Snapshot reads the server's memory and key count.
func (s *System) Snapshot(ctx context.Context) (Snapshot, error) {
	cl, err := resp.Dial(ctx, s.Addr())
	if err != nil {
		return Snapshot{}, err
	}
	defer cl.Close()
	return TakeSnapshot(ctx, cl, s.PID())
}

// CPU returns the CPU time a server we started has used.
func (s *System) CPU() (time.Duration, error) {
	if s.srv == nil {
		return 0, fmt.Errorf("loadtest: %s was not started here", s.Name)
	}
	return CPU(s.srv.PID())
}

// Close stops a server we started.
func (s *System) Close() error {
	if s.srv == nil {
		return nil
	}
	err := s.srv.Stop()
	s.srv = nil
	return err
}
