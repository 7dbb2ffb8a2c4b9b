package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// Server is a server process this process started on a free loopback port.
type Server struct {
	Name string // "redis" or "rlstore"
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	dir  string
	done chan error
}

// PID returns the server's process id, for reading its RSS.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// StartRedis starts redis-server from bin with persistence off, bound to
// 127.0.0.1 on a free port, and waits until it answers PING.
func StartRedis(ctx context.Context, bin string, logs io.Writer) (*Server, error) {
	return startServer(ctx, "redis", logs, func(port int, dir string) *exec.Cmd {
		return exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", "")
	})
}

// StartRlstore starts rlstore from bin with --port 0 and extra flags after
// it, reads the address it bound from its ready log line, and waits until it
// answers PING. Its log is passed through to logs.
func StartRlstore(ctx context.Context, bin string, extra []string, logs io.Writer) (*Server, error) {
	dir, err := os.MkdirTemp("", "rlload-rlstore-")
	if err != nil {
		return nil, err
	}
	ready := newReadyWriter(logs)
	cmd := exec.Command(bin, append([]string{"--port", "0"}, extra...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logs, ready
	s, err := spawn("rlstore", cmd, dir)
	if err != nil {
		return nil, err
	}
	if s.Addr, err = s.waitAddr(ctx, ready.addr, 15*time.Second); err == nil {
		err = s.waitReady(ctx, 15*time.Second)
	}
	if err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// spawn starts cmd, whose scratch folder is dir, as server name.
func spawn(name string, cmd *exec.Cmd, dir string) (*Server, error) {
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("loadtest: start %s: %w", name, err)
	}
	s := &Server{Name: name, cmd: cmd, dir: dir, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	return s, nil
}

// waitAddr waits for the address the server logs once it listens.
func (s *Server) waitAddr(ctx context.Context, addr <-chan string, limit time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	select {
	case a := <-addr:
		return a, nil
	case err := <-s.done:
		s.done <- err
		return "", fmt.Errorf("%w: %s: %v", errExited, s.Name, err)
	case <-ctx.Done():
		return "", fmt.Errorf("loadtest: %s did not log the address it listens on", s.Name)
	}
}

// startServer retries a few times when the server exits at once, since a
// free port may be taken between choosing it and the server binding it:
// redis-server cannot bind port 0 and say which port it got.
func startServer(ctx context.Context, name string, logs io.Writer, mk func(int, string) *exec.Cmd) (*Server, error) {
	var err error
	for range 3 {
		var s *Server
		if s, err = startOnce(ctx, name, logs, mk); !errors.Is(err, errExited) {
			return s, err
		}
	}
	return nil, err
}

// errExited reports a server that exited before serving.
var errExited = errors.New("loadtest: server exited before answering")

func startOnce(ctx context.Context, name string, logs io.Writer, mk func(int, string) *exec.Cmd) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rlload-"+name+"-")
	if err != nil {
		return nil, err
	}
	cmd := mk(port, dir)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, logs, logs
	s, err := spawn(name, cmd, dir)
	if err != nil {
		return nil, err
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if err := s.waitReady(ctx, 15*time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls PING until it gets any reply, the process exits or time
// is up. Any reply, even an error, shows the server is serving RESP.
func (s *Server) waitReady(ctx context.Context, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if ping(ctx, s.Addr) == nil {
			return nil
		}
		select {
		case err := <-s.done:
			s.done <- err
			return fmt.Errorf("%w: %s: %v", errExited, s.Name, err)
		case <-ctx.Done():
			return fmt.Errorf("loadtest: %s did not answer PING on %s", s.Name, s.Addr)
		case <-tick.C:
		}
	}
}

func ping(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cl, err := resp.Dial(ctx, addr)
	if err != nil {
		return err
	}
	defer cl.Close()
	_, err = cl.Do(ctx, "PING")
	return err
}

// Stop asks the server to exit with SIGTERM, kills it after 10 s, and
// removes its scratch directory.
func (s *Server) Stop() error {
	defer os.RemoveAll(s.dir)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.done:
		return exitErr(err)
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		return fmt.Errorf("loadtest: %s ignored SIGTERM: %w", s.Name, <-s.done)
	}
}

// exitErr treats death by the SIGTERM we sent as a clean exit.
func exitErr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
			return nil
		}
	}
	return err
}
