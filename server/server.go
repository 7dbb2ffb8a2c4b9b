package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/rlstore/rlstore/shard"
	"github.com/tidwall/redcon"
)

// Config configures a Server. cmd/rlstore fills it in; the zero values of the
// optional fields take the defaults New writes down.
type Config struct {
	Addr            string      // host:port to listen on; port 0 picks a free one
	Store           *shard.Map  // required
	Logger          *slog.Logger
	Clock           func() time.Time // default time.Now
	RequirePass     string
	MaxClients      int   // default 10000
	MaxRequestBytes int64 // default 512 MiB, like redis-server's proto-max-bulk-len
}

// Server serves RESP clients. Make it with New; start it with Serve.
type Server struct {
	cfg      Config
	commands map[string]*command
	srv      *redcon.Server
}

// New validates cfg and returns a Server that is not yet listening.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("server: no store")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s := &Server{cfg: cfg, commands: map[string]*command{}}
	s.register(connectionCommands())
	s.register(decisionCommands())
	s.register(keyspaceCommands())
	return s, nil
}

func (s *Server) register(cmds []command) {
	for i := range cmds {
		s.commands[cmds[i].name] = &cmds[i]
	}
}

// Serve listens and serves until Close. ready, if not nil, receives the listening address.
func (s *Server) Serve(ready chan<- net.Addr) error {
	s.srv = redcon.NewServerNetwork("tcp", s.cfg.Addr, s.handle, s.accept, s.closed)
	sig := make(chan error, 1)
	go func() {
		if err := <-sig; err == nil && ready != nil {
			ready <- s.srv.Addr()
		}
	}()
	return s.srv.ListenServeAndSignal(sig)
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

func (s *Server) accept(conn redcon.Conn) bool {
	conn.SetContext(&client{conn: conn, resp: 2, authed: s.cfg.RequirePass == ""})
	return true
}

func (s *Server) closed(conn redcon.Conn, err error) {}

func (s *Server) handle(conn redcon.Conn, cmd redcon.Command) {
	c := conn.Context().(*client)
	name := string(cmd.Args[0]) // TODO lower-case without allocating
	cm, ok := s.commands[name]
	if !ok {
		conn.WriteError("ERR unknown command '" + name + "'")
		return
	}
	cm.run(s, c, cmd.Args)
}

// Shutdown stops accepting, lets every client's queued commands finish and
// their replies go out, then closes. It returns ctx's error if ctx ends first.
func (s *Server) Shutdown(ctx context.Context) error { return s.Close() } // TODO: drain
