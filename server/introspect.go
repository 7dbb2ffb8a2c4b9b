package server

import "sort"

// introspectionCommands is COMMAND, which describes the command table to
// clients: redis-cli reads it for hints, go-redis for key positions.
func introspectionCommands() []command {
	return []command{{name: "command", arity: -1, run: cmdCommand, group: "server", summary: "Describes every command", subs: []command{
		{name: "count", arity: 2, run: cmdCommandCount, summary: "Returns the number of commands"},
		{name: "info", arity: -2, run: cmdCommandInfo, summary: "Describes the commands named, or all"},
		{name: "docs", arity: -2, run: cmdCommandDocs, summary: "Documents the commands named, or all"},
		{name: "list", arity: 2, run: cmdCommandList, summary: "Returns every command's name"},
		{name: "getkeys", arity: -3, run: cmdCommandGetKeys, summary: "Extracts the key names from a call of a command"},
		{name: "getkeysandflags", arity: -3, run: cmdCommandGetKeysAndFlags, summary: "Extracts the key names and their flags from a call of a command"},
		{name: "help", arity: 2, run: cmdCommandHelp, summary: "Lists COMMAND's subcommands"},
	}}}
}

func cmdCommand(s *Server, c *client, args [][]byte) {
	cmds := s.sortedCommands()
	c.conn.WriteArray(len(cmds))
	for _, cm := range cmds {
		writeCommandInfo(c, cm)
	}
}

func cmdCommandCount(s *Server, c *client, args [][]byte) { c.conn.WriteInt(len(s.commands)) }

func cmdCommandList(s *Server, c *client, args [][]byte) {
	cmds := s.sortedCommands()
	c.conn.WriteArray(len(cmds))
	for _, cm := range cmds {
		c.conn.WriteBulkString(cm.name)
	}
}

// cmdCommandInfo describes the commands named, with a null for each unknown one.
func cmdCommandInfo(s *Server, c *client, args [][]byte) {
	if len(args) == 2 {
		cmdCommand(s, c, args)
		return
	}
	c.conn.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		if cm := s.findCommand(name); cm != nil {
			writeCommandInfo(c, cm)
		} else {
			writeNull(c)
		}
	}
}

// cmdCommandDocs is a map from each command named (all, if none) to its docs; unknown ones are left out.
func cmdCommandDocs(s *Server, c *client, args [][]byte) {
	var pairs []pair
	table := commandDocTable()
	for _, cm := range s.sortedCommands() {
		if len(args) == 2 || named(cm.name, args[2:]) {
			pairs = append(pairs, pair{cm.name, commandDocs(cm, table)})
		}
	}
	writeMap(c, pairs)
}

// Replies of COMMAND GETKEYS, in Redis's words.
const (
	errGetKeysCommand = "ERR Invalid command specified"
	errGetKeysNoKeys  = "ERR The command has no key arguments"
	errGetKeysArity   = "ERR Invalid number of arguments specified for command"
	errGetKeysArgs    = "ERR Invalid arguments specified for command"
)

func cmdCommandGetKeys(s *Server, c *client, args [][]byte) { getKeys(s, c, args[2:], false) }

func cmdCommandGetKeysAndFlags(s *Server, c *client, args [][]byte) { getKeys(s, c, args[2:], true) }

// getKeys is COMMAND GETKEYS[ANDFLAGS] for the call call, from its command's
// key specs, checked in Redis's order.
func getKeys(s *Server, c *client, call [][]byte, withFlags bool) {
	cm := s.findCommand(call[0])
	if cm != nil && len(cm.subs) > 0 && len(call) > 1 {
		cm = cm.sub(call[1])
	}
	var at []keyArg
	ok := false
	if cm != nil && len(cm.keys) > 0 && arityFits(cm.arity, len(call)) {
		at, ok = keyIndexes(cm.keys, len(call), nil)
	}
	switch {
	case cm == nil:
		c.conn.WriteError(errGetKeysCommand)
	case len(cm.keys) == 0:
		c.conn.WriteError(errGetKeysNoKeys)
	case !arityFits(cm.arity, len(call)):
		c.conn.WriteError(errGetKeysArity)
	case !ok:
		c.conn.WriteError(errGetKeysArgs)
	default:
		writeGetKeys(c, call, at, withFlags)
	}
}

// writeGetKeys writes the keys of call at, each with its key spec's flags if withFlags.
func writeGetKeys(c *client, call [][]byte, at []keyArg, withFlags bool) {
	c.conn.WriteArray(len(at))
	for _, k := range at {
		if withFlags {
			c.conn.WriteArray(2)
		}
		c.conn.WriteBulk(call[k.index])
		if withFlags {
			writeValue(c, k.flags.names())
		}
	}
}

func cmdCommandHelp(s *Server, c *client, args [][]byte) { writeHelp(c, introspectionCommands()[0]) }

func named(name string, names [][]byte) bool {
	for _, n := range names {
		if equalFoldASCII(n, name) {
			return true
		}
	}
	return false
}

func (s *Server) sortedCommands() []*command {
	cmds := make([]*command, 0, len(s.commands))
	for _, cm := range s.commands {
		cmds = append(cmds, cm)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	return cmds
}

// writeCommandInfo writes Redis 7's ten-field description of cm: name,
// arity, flags, first key, last key, key step, ACL categories, tips, key
// specs and subcommands. go-redis refuses other lengths.
func writeCommandInfo(c *client, cm *command) {
	c.conn.WriteArray(10)
	c.conn.WriteBulkString(cm.name)
	c.conn.WriteInt(cm.arity)
	writeValue(c, cm.flags.names())
	c.conn.WriteInt(cm.firstKey)
	c.conn.WriteInt(cm.lastKey)
	c.conn.WriteInt(cm.keyStep)
	writeValue(c, cm.acl.names())
	writeSetLen(c, 0) // tips
	writeKeySpecs(c, cm.keys)
	if len(cm.subs) == 0 {
		writeSetLen(c, 0) // Redis's empty subcommands are a set, the others an array
		return
	}
	c.conn.WriteArray(len(cm.subs))
	for i := range cm.subs {
		writeCommandInfo(c, &cm.subs[i])
	}
}

// writeKeySpecs writes key specs as Redis 7 does: a set of maps.
func writeKeySpecs(c *client, keys []keySpec) {
	specs := make(respSet, len(keys))
	for i, k := range keys {
		specs[i] = []pair{
			{"flags", k.flags.names()},
			{"begin_search", []pair{{"type", "index"}, {"spec", []pair{{"index", k.index}}}}},
			{"find_keys", []pair{{"type", "range"}, {"spec", []pair{{"lastkey", k.lastKey}, {"keystep", k.step}, {"limit", 0}}}}},
		}
	}
	writeValue(c, specs)
}

// commandDocs is COMMAND DOCS' map for cm, with what commandDocTable adds.
func commandDocs(cm *command, table map[string]cmdDoc) []pair {
	group := cm.group
	if group == "" {
		group = "generic"
	}
	d := table[cm.name]
	summary := cm.summary
	if summary == "" {
		summary = d.summary
	}
	docs := []pair{{"summary", summary}, {"since", d.since}, {"group", group}}
	if len(d.args) > 0 {
		docs = append(docs, pair{"arguments", docArgs(d.args)})
	}
	if len(cm.subs) > 0 {
		subs := make([]pair, len(cm.subs))
		for i := range cm.subs {
			subs[i] = pair{cm.subs[i].name, commandDocs(&cm.subs[i], table)}
		}
		docs = append(docs, pair{"subcommands", subs})
	}
	return docs
}
