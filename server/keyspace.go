package server

import (
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
)

// keyspaceCommands are the Redis key commands (docs/commands.md, Inspection and keyspace).
//
// A key whose state has expired but that Sweep has not yet freed no longer
// restricts anything, so, like a Redis key past its TTL, it does not exist for
// EXISTS, TYPE, TTL, PTTL, SCAN, KEYS or DEL's count. DBSIZE, like Redis's,
// still counts it until it is freed.
func keyspaceCommands() []command {
	cmds := []command{
		{name: "del", arity: -2, flags: flagWrite, run: cmdDel, changes: changesArgs, firstKey: 1, lastKey: -1, keyStep: 1},
		{name: "exists", arity: -2, flags: flagCacheable, run: cmdExists, firstKey: 1, lastKey: -1, keyStep: 1},
		{name: "type", arity: 2, flags: flagCacheable, run: cmdType, firstKey: 1, lastKey: 1, keyStep: 1},
		{name: "pttl", arity: 2, flags: flagCacheable, run: cmdPTTL, firstKey: 1, lastKey: 1, keyStep: 1},
		{name: "ttl", arity: 2, flags: flagCacheable, run: cmdTTL, firstKey: 1, lastKey: 1, keyStep: 1},
		{name: "scan", arity: -2, run: cmdScan},
		{name: "keys", arity: 2, run: cmdKeys},
		{name: "dbsize", arity: 1, run: cmdDBSize},
		{name: "flushall", arity: -1, flags: flagWrite | flagAllKeys, run: cmdFlushAll},
	}
	return append(cmds, databaseCommands()...)
}

// lookup returns the algorithm of key's state and when it expires, or false
// if the key does not exist or its state has expired by now.
//
// Policy state lives under reserved keys (policy.Reserved), which are hidden:
// to every command here they do not exist, though DBSIZE counts them.
func (s *Server) lookup(key []byte, now int64) (window.Kind, int64, bool) {
	if policy.Reserved(key) {
		return window.KindNone, 0, false
	}
	inf, ok := s.cfg.Store.Get(key, now)
	if !ok || inf.Expiry <= now {
		return window.KindNone, 0, false
	}
	return inf.Params.Kind, inf.Expiry, true
}

// cmdDel counts a key named twice once, as Redis does: the second time it is gone.
func cmdDel(s *Server, c *client, args [][]byte) {
	now, n := s.unixNano(), int64(0)
	for _, key := range args[1:] {
		_, _, live := s.lookup(key, now)
		if s.reg != nil {
			s.reg.forget(key) // region_keys.go
		}
		if !policy.Reserved(key) && s.cfg.Store.Delete(key) && live {
			n++
		}
	}
	c.conn.WriteInt64(n)
}

// cmdExists counts a key named twice twice, as Redis does.
func cmdExists(s *Server, c *client, args [][]byte) {
	now, n := s.unixNano(), int64(0)
	for _, key := range args[1:] {
		if _, _, live := s.lookupRead(key, now); live {
			n++
		}
	}
	c.conn.WriteInt64(n)
}

func cmdType(s *Server, c *client, args [][]byte) {
	kind, _, _ := s.lookupRead(args[1], s.unixNano())
	c.conn.WriteString(kind.String())
}

func cmdPTTL(s *Server, c *client, args [][]byte) {
	c.conn.WriteInt64(s.pttl(args[1]))
}

// cmdTTL rounds to the nearest second, as Redis's TTL does.
func cmdTTL(s *Server, c *client, args [][]byte) {
	ms := s.pttl(args[1])
	if ms >= 0 {
		ms = (ms + 500) / 1000
	}
	c.conn.WriteInt64(ms)
}

// pttl returns the ms until key's state expires, rounded up, or -2 if it does not exist.
// Every state expires by itself, so the -1 of a Redis key without a TTL never occurs.
func (s *Server) pttl(key []byte) int64 {
	now := s.unixNano()
	_, exp, live := s.lookupRead(key, now)
	if !live {
		return -2
	}
	return ceilMs(time.Duration(exp - now))
}

func cmdDBSize(s *Server, c *client, args [][]byte) {
	c.conn.WriteInt64(s.cfg.Store.Len())
}

// cmdFlushAll flushes at once whichever mode is asked for: the store frees a shard at a time.
func cmdFlushAll(s *Server, c *client, args [][]byte) {
	if len(args) > 2 || (len(args) == 2 && !equalFoldASCII(args[1], "async") && !equalFoldASCII(args[1], "sync")) {
		c.conn.WriteError(string(errArgSyntax))
		return
	}
	if s.reg != nil {
		s.reg.forgetAll() // region_keys.go
	}
	if err := s.flushAll(); err != nil {
		c.conn.WriteError("ERR " + err.Error())
		return
	}
	c.conn.WriteString("OK")
}
