package server

import (
	"bytes"
	"net"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/glob"
	"github.com/rlstore/rlstore/server/internal/proc"
)

// configParam is one parameter CONFIG GET shows. check and set are nil for
// the read-only ones; check returns why a value is refused, or "".
type configParam struct {
	name  string
	get   func(s *Server) string
	check func(v []byte) string
	set   func(s *Server, v []byte)
}

// configParams are the parameters CONFIG knows, in the order CONFIG GET
// lists them: the server's, then those its concerns declare (core.Param).
// Clients such as redis-benchmark read save and appendonly.
func (s *Server) configParams() []configParam {
	return append([]configParam{
		{name: "bind", get: func(s *Server) string { h, _ := s.hostPort(); return h }},
		{name: "port", get: func(s *Server) string { _, p := s.hostPort(); return p }},
		{name: "requirepass", get: hiddenPass, check: checkRequirePass, set: setRequirePass},
		{name: "maxclients", get: getMaxClients, check: checkMaxClients, set: setMaxClients},
		{name: "maxmemory-clients", get: func(s *Server) string { return strconv.FormatInt(s.cfg.MaxMemoryClients, 10) }},
		{name: "max-request-bytes", get: func(s *Server) string { return strconv.FormatInt(s.cfg.MaxRequestBytes, 10) }},
		{name: "max-key-bytes", get: func(s *Server) string { return strconv.FormatInt(s.cfg.MaxKeyBytes, 10) }},
		{name: "databases", get: func(*Server) string { return "1" }},
		{name: "save", get: getSave},
		{name: "appendonly", get: getAppendOnly},
		{name: "appendfsync", get: getAppendFsync},
		{name: "dir", get: func(s *Server) string { return s.cfg.DataDir }},
		{name: "cluster-enabled", get: func(s *Server) string { return yesNo(s.ho != nil) }},
		{name: "hz", get: func(s *Server) string { return strconv.FormatInt(s.hz(), 10) }},
		{name: "timeout", get: func(*Server) string { return "0" }},
		// the store's limit, and noeviction, since live limiter state is never evicted
		{name: "maxmemory", get: func(s *Server) string { return strconv.FormatInt(s.cfg.Store.MaxMemory(), 10) }},
		{name: "maxmemory-policy", get: func(*Server) string { return "noeviction" }},
	}, paramsOf(s.slow.Params())...)
}

// paramsOf makes a concern's parameters the server's.
func paramsOf(ps []core.Param) []configParam {
	out := make([]configParam, len(ps))
	for i, p := range ps {
		out[i] = configParam{name: p.Name, get: func(*Server) string { return p.Get() }, check: p.Check}
		if p.Set != nil {
			out[i].set = func(_ *Server, v []byte) { p.Set(v) }
		}
	}
	return out
}

func configSubcommands() []command {
	return []command{
		{name: "get", arity: -3, run: cmdConfigGet, summary: "Returns the parameters matching the glob patterns"},
		{name: "set", arity: -4, flags: core.FlagAdmin, run: cmdConfigSet, summary: "Sets maxclients or requirepass"},
		{name: "help", arity: 2, run: cmdConfigHelp, summary: "Lists CONFIG's subcommands"},
	}
}

// cmdConfigGet is CONFIG GET pattern [pattern …]. Patterns are Redis globs, without case.
func cmdConfigGet(s *Server, c *client, args [][]byte) {
	var pairs []core.Pair
	for _, p := range s.configParams() {
		for _, pat := range args[2:] {
			if glob.Match(bytes.ToLower(pat), []byte(p.name)) {
				pairs = append(pairs, core.Pair{Key: p.name, Val: p.get(s)})
				break
			}
		}
	}
	core.WriteMap(&c.Session, pairs)
}

// cmdConfigSet is CONFIG SET name value [name value …]. As in Redis 7 it
// checks every pair before it applies any.
func cmdConfigSet(s *Server, c *client, args [][]byte) {
	if len(args)%2 != 0 {
		c.conn.WriteError(errSyntax)
		return
	}
	for i := 2; i < len(args); i += 2 {
		if reply := s.checkConfig(args[i], args[i+1]); reply != "" {
			c.conn.WriteError(reply)
			return
		}
	}
	for i := 2; i < len(args); i += 2 {
		s.findParam(args[i]).set(s, args[i+1])
	}
	c.conn.WriteString("OK")
}

// checkConfig returns the reply refusing name = val, or "" if it may be set.
func (s *Server) checkConfig(name, val []byte) string {
	p := s.findParam(name)
	switch {
	case p == nil:
		return "ERR Unknown option or number of arguments for CONFIG SET - '" + core.QuoteArg(name, 128) + "'"
	case p.check == nil:
		return configFailed(p.name, "can't set immutable config")
	}
	if why := p.check(val); why != "" {
		return configFailed(p.name, why)
	}
	return ""
}

func configFailed(name, why string) string {
	return "ERR CONFIG SET failed (possibly related to argument '" + name + "') - " + why
}

func (s *Server) findParam(name []byte) *configParam {
	for _, p := range s.configParams() {
		if equalFoldASCII(name, p.name) {
			return &p
		}
	}
	return nil
}

// hiddenPass is what CONFIG GET shows of requirepass: whether there is one,
// never the password, which would otherwise reach any client allowed CONFIG
// and every log of its replies.
func hiddenPass(s *Server) string {
	if s.users.RequirePass() == "" {
		return ""
	}
	return "(set)"
}

func setRequirePass(s *Server, v []byte) {
	pass := string(v)
	s.users.SetRequirePass(pass) // connections already authenticated stay so, as in Redis
}

func getMaxClients(s *Server) string { return strconv.FormatInt(s.maxClients.Load(), 10) }

// maxMaxClients is Redis's bound on maxclients, an unsigned int.
const maxMaxClients = 1<<32 - 1

// reservedFDs are the descriptors kept for other than clients, as Redis keeps them.
const reservedFDs = 32

// checkMaxClients refuses what Redis refuses: a number out of its range,
// and more clients than the process may open descriptors for.
func checkMaxClients(v []byte) string {
	n, ok := parseInt(v)
	switch {
	case !ok:
		return "argument couldn't be parsed into an integer"
	case n < 1 || n > maxMaxClients:
		return "argument must be between 1 and " + strconv.Itoa(maxMaxClients) + " inclusive"
	}
	if limit, ok := proc.OpenFilesLimit(); ok && uint64(n)+reservedFDs > limit {
		return "The operating system is not able to handle the specified number of clients, try with " +
			strconv.FormatUint(max(limit, reservedFDs+1)-reservedFDs, 10)
	}
	return ""
}

// maxPassBytes bounds requirepass: a password is compared on every AUTH,
// and CONFIG GET and INFO may show it.
const maxPassBytes = 1024

func checkRequirePass(v []byte) string {
	if len(v) > maxPassBytes {
		return "requirepass must be at most " + strconv.Itoa(maxPassBytes) + " bytes"
	}
	return ""
}

// setMaxClients changes the limit for new connections; none already connected is closed.
func setMaxClients(s *Server, v []byte) {
	n, _ := parseInt(v)
	s.maxClients.Store(n)
}

// hostPort returns the address the server listens on, or is configured to.
func (s *Server) hostPort() (string, string) {
	addr := s.cfg.Addr
	if ln := s.listener(); ln != nil {
		addr = ln.Addr().String()
	}
	h, p, _ := net.SplitHostPort(addr)
	return h, p
}

func cmdConfigHelp(s *Server, c *client, args [][]byte) {
	writeHelp(c, command{subs: configSubcommands()})
}

// getAppendOnly says yes when the store keeps its append-only log, as INFO's aof_enabled does.
func getAppendOnly(s *Server) string {
	if s.cfg.Durability == nil {
		return "no"
	}
	return "yes"
}

// getAppendFsync names the log's fsync mode; without persistence, the
// mode configured (and logged at start), as Redis shows appendfsync with
// appendonly no.
func getAppendFsync(s *Server) string {
	if s.cfg.Durability == nil {
		return s.cfg.AppendFsync
	}
	return s.cfg.Durability.Stats().Fsync.String()
}

// getSave is Redis's save: "seconds changes". rlstore snapshots every
// SaveInterval while anything changes, so "seconds 1"; with no periodic
// snapshot, or no data dir, "", as Redis's save "".
func getSave(s *Server) string {
	if s.cfg.Durability == nil || s.cfg.SaveInterval <= 0 {
		return ""
	}
	return strconv.FormatInt(int64(s.cfg.SaveInterval/time.Second), 10) + " 1"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
