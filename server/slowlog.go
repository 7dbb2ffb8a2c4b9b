package server

import (
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// The defaults of the slow log and the latency monitor, as redis-server's.
const (
	DefaultSlowlogSlowerThan = 10 * time.Millisecond
	DefaultSlowlogMaxLen     = 128
)

// recordSlow logs c's run of cm that took d in the slow log, if it was
// slow enough, and as a spike for the latency monitor, if it was one (ran
// asks s.slow which, two atomic loads). A secret command (cm.Secret) keeps
// only its name.
func (s *Server) recordSlow(c *client, cm *core.Command, args [][]byte, d time.Duration, slow, spiked bool) {
	if slow {
		s.slow.Add(args, cm.Secret != nil, d, c.addr, c.getMeta().Name)
	}
	if spiked {
		s.slow.AddSpike(d)
	}
}

// slowlogParams are the CONFIG parameters of the slow log and latency monitor.
func slowlogParams() []configParam {
	return []configParam{
		{name: "slowlog-log-slower-than", get: getSlowerThan, check: checkIntAtLeast(-1), set: setSlowerThan},
		{name: "slowlog-max-len", get: func(s *Server) string { return strconv.FormatInt(s.slow.MaxLen.Load(), 10) },
			check: checkIntAtLeast(0), set: func(s *Server, v []byte) { n, _ := parseInt(v); s.slow.MaxLen.Store(n) }},
		{name: "latency-monitor-threshold", get: func(s *Server) string { return strconv.FormatInt(s.slow.LatencyMs.Load(), 10) },
			check: checkIntAtLeast(0), set: func(s *Server, v []byte) { n, _ := parseInt(v); s.slow.LatencyMs.Store(n) }},
	}
}

// getSlowerThan shows the threshold in microseconds, as Redis does.
func getSlowerThan(s *Server) string {
	t := s.slow.SlowerThan.Load()
	if t < 0 {
		return "-1"
	}
	return strconv.FormatInt(t/int64(time.Microsecond), 10)
}

func setSlowerThan(s *Server, v []byte) {
	n, _ := parseInt(v)
	s.slow.SlowerThan.Store(max(n*int64(time.Microsecond), -1))
}

func checkIntAtLeast(lo int64) func(v []byte) string {
	return func(v []byte) string {
		n, ok := parseInt(v)
		if !ok || n < lo {
			return "argument must be an integer of at least " + strings.TrimSpace(strconv.FormatInt(lo, 10))
		}
		return ""
	}
}
