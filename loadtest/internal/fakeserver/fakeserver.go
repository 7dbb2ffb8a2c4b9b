// Package fakeserver is a small RESP server for the load generator's tests.
package fakeserver

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Server is a RESP server for tests: PING, INCR, ERR (an error reply)
// and FAKE.SLIDE key limit window, an exact sliding window over per-second
// counters decided with the real clock. With barrier > 0, a connection
// answers nothing until it has received barrier commands, which deadlocks a
// client that waits for each reply before sending the next command.
type Server struct {
	ln        net.Listener
	barrier   int
	DropAfter int // when > 0, a connection is closed after this many commands

	mu     sync.Mutex                 // guards counts and incr
	counts map[string]map[int64]int64 // key → second → admitted
	incr   map[string]int64
}

// Start serves on a loopback port until the test ends.
func Start(t *testing.T, barrier int) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &Server{ln: ln, barrier: barrier, counts: map[string]map[int64]int64{}, incr: map[string]int64{}}
	var wg sync.WaitGroup
	wg.Go(func() { s.serve(&wg) })
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

func (s *Server) Addr() string { return s.ln.Addr().String() }

func (s *Server) serve(wg *sync.WaitGroup) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		conns = append(conns, c)
		wg.Go(func() { s.handle(c) })
	}
}

func (s *Server) handle(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	var out []byte
	held, served := 0, 0
	for {
		args, err := readCommand(br)
		if err != nil {
			return
		}
		out = append(out, s.reply(args)...)
		held++
		if served++; s.DropAfter > 0 && served >= s.DropAfter {
			return
		}
		if held < s.barrier || br.Buffered() > 0 {
			continue // hold replies until the barrier is met, then answer a whole pipeline in one write
		}
		if _, err := c.Write(out); err != nil {
			return
		}
		out, held = out[:0], 0
	}
}

func (s *Server) reply(args []string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch strings.ToUpper(args[0]) {
	case "PING":
		return "+PONG\r\n"
	case "FLUSHALL":
		s.counts, s.incr = map[string]map[int64]int64{}, map[string]int64{}
		return "+OK\r\n"
	case "INCR":
		s.incr[args[1]]++
		return fmt.Sprintf(":%d\r\n", s.incr[args[1]])
	case "FAKE.SLIDE":
		return s.slideLocked(args[1], atoi(args[2]), atoi(args[3]))
	case "DBSIZE":
		return fmt.Sprintf(":%d\r\n", len(s.counts)+len(s.incr))
	case "INFO":
		body := "# Memory\r\nused_memory_rss:1048576\r\n"
		return fmt.Sprintf("$%d\r\n%s\r\n", len(body), body)
	}
	return "-ERR unknown command '" + args[0] + "'\r\n"
}

func (s *Server) slideLocked(key string, limit, window int64) string {
	now := time.Now().Unix()
	if s.counts[key] == nil {
		s.counts[key] = map[int64]int64{}
	}
	var sum int64
	for sec := now - window + 1; sec <= now; sec++ {
		sum += s.counts[key][sec]
	}
	if sum+1 > limit {
		return fmt.Sprintf("*5\r\n:0\r\n:%d\r\n:%d\r\n:1000\r\n:1000\r\n", limit, limit-sum)
	}
	s.counts[key][now]++
	return fmt.Sprintf("*5\r\n:1\r\n:%d\r\n:%d\r\n:0\r\n:1000\r\n", limit, limit-sum-1)
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// readCommand reads one RESP array of bulk strings.
func readCommand(br *bufio.Reader) ([]string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 4 || line[0] != '*' {
		return nil, fmt.Errorf("bad command header %q", line)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	args := make([]string, n)
	for i := range args {
		if line, err = br.ReadString('\n'); err != nil {
			return nil, err
		}
		size, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
		buf := make([]byte, size+2)
		if _, err := io.ReadFull(br, buf); err != nil {
			return nil, err
		}
		args[i] = string(buf[:size])
	}
	return args, nil
}
