package server

import "strconv"

// Replies of MEMORY, OBJECT and WATCH, in Redis's words where Redis has them.
const (
	errNoFreq       = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust."
	errNoIdle       = "ERR idle time is not tracked: rlstore keeps no access times (TTL and PTTL tell when a key's state expires)"
	errWatchInMulti = "ERR WATCH inside MULTI is not allowed"
	errNoWatch      = "ERR WATCH is not supported: each rlstore command is atomic on its key. For all-or-nothing decisions over several limits use RL.CHECK with a policy; MULTI/EXEC runs commands in order"
)

// objectCommands are MEMORY, OBJECT, WATCH and UNWATCH: what tools such as
// redis-cli --memkeys and client libraries call about keys.
func objectCommands() []command {
	return []command{
		{name: "memory", arity: -2, group: "server", summary: "Reports memory use", subs: []command{
			{name: "usage", arity: -3, run: cmdMemoryUsage, firstKey: 2, lastKey: 2, keyStep: 1, summary: "Returns the bytes a key's state holds"},
			{name: "help", arity: 2, run: cmdMemoryHelp, summary: "Lists MEMORY's subcommands"},
		}},
		{name: "object", arity: -2, group: "generic", summary: "Inspects a key's internals", subs: []command{
			{name: "encoding", arity: 3, run: cmdObjectEncoding, firstKey: 2, lastKey: 2, keyStep: 1, summary: "Returns the algorithm whose state the key holds"},
			{name: "freq", arity: 3, run: cmdObjectFreq, firstKey: 2, lastKey: 2, keyStep: 1, summary: "Not tracked: there is no LFU eviction"},
			{name: "idletime", arity: 3, run: cmdObjectIdle, firstKey: 2, lastKey: 2, keyStep: 1, summary: "Not tracked: there are no access times"},
			{name: "refcount", arity: 3, run: cmdObjectRefcount, firstKey: 2, lastKey: 2, keyStep: 1, summary: "Returns 1 for a key that exists"},
			{name: "help", arity: 2, run: cmdObjectHelp, summary: "Lists OBJECT's subcommands"},
		}},
		{name: "watch", arity: -2, flags: flagNoQueue, run: cmdWatch, firstKey: 1, lastKey: -1, keyStep: 1, group: "transactions", summary: "Not supported: answers an error naming RL.CHECK"},
		{name: "unwatch", arity: 1, run: cmdUnwatch, group: "transactions", summary: "Replies OK: nothing is ever watched"},
	}
}

// cmdMemoryUsage is MEMORY USAGE key [SAMPLES n]: null for a missing key, as in Redis.
func cmdMemoryUsage(s *Server, c *client, args [][]byte) {
	if len(args) != 3 && (len(args) != 5 || !equalFoldASCII(args[3], "samples")) {
		c.conn.WriteError(errSyntax)
		return
	}
	if len(args) == 5 {
		if _, ok := parseInt(args[4]); !ok {
			c.conn.WriteError(errNotInt)
			return
		}
	}
	if _, _, live := s.lookup(args[2], s.unixNano()); live {
		if n, ok := s.cfg.Store.MemoryUsage(args[2]); ok {
			c.conn.WriteInt64(n)
			return
		}
	}
	writeNull(c)
}

func cmdObjectEncoding(s *Server, c *client, args [][]byte) {
	kind, _, live := s.lookup(args[2], s.unixNano())
	if !live {
		writeNull(c)
		return
	}
	c.conn.WriteBulkString(kind.String())
}

// cmdObjectFreq answers as Redis does without an LFU policy: rlstore never evicts.
func cmdObjectFreq(s *Server, c *client, args [][]byte) { objectOrNull(s, c, args[2], errNoFreq) }

func cmdObjectIdle(s *Server, c *client, args [][]byte) { objectOrNull(s, c, args[2], errNoIdle) }

func cmdObjectRefcount(s *Server, c *client, args [][]byte) {
	if _, _, live := s.lookup(args[2], s.unixNano()); live {
		c.conn.WriteInt(1)
		return
	}
	writeNull(c)
}

// objectOrNull replies null for a missing key, as Redis checks the key first, else the error.
func objectOrNull(s *Server, c *client, key []byte, reply string) {
	if _, _, live := s.lookup(key, s.unixNano()); !live {
		writeNull(c)
		return
	}
	c.conn.WriteError(reply)
}

func cmdMemoryHelp(s *Server, c *client, args [][]byte) { writeHelp(c, objectCommands()[0]) }
func cmdObjectHelp(s *Server, c *client, args [][]byte) { writeHelp(c, objectCommands()[1]) }

// cmdWatch runs at once inside MULTI, as Redis's does, to answer Redis's
// error there without dooming the transaction.
func cmdWatch(s *Server, c *client, args [][]byte) {
	if c.Multi {
		c.conn.WriteError(errWatchInMulti)
		return
	}
	c.conn.WriteError(errNoWatch)
}

func cmdUnwatch(s *Server, c *client, args [][]byte) { c.conn.WriteString("OK") }

// maxMemoryParams are CONFIG GET maxmemory and maxmemory-policy: the store's
// limit, and noeviction, since live limiter state is never evicted.
func maxMemoryParams() []configParam {
	return []configParam{
		{name: "maxmemory", get: func(s *Server) string { return strconv.FormatInt(s.cfg.Store.MaxMemory(), 10) }},
		{name: "maxmemory-policy", get: func(*Server) string { return "noeviction" }},
	}
}
