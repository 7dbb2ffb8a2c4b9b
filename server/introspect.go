package server

import (
	"sort"

	"github.com/rlstore/rlstore/server/internal/core"
)

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

func cmdCommandCount(s *Server, c *client, args [][]byte) { c.conn.WriteInt(s.table.Len()) }

func cmdCommandList(s *Server, c *client, args [][]byte) {
	cmds := s.sortedCommands()
	c.conn.WriteArray(len(cmds))
	for _, cm := range cmds {
		c.conn.WriteBulkString(cm.Name)
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
		if cm := s.table.Find(name); cm != nil {
			writeCommandInfo(c, cm)
		} else {
			c.Null()
		}
	}
}

// cmdCommandDocs is a map from each command named (all, if none) to its docs; unknown ones are left out.
func cmdCommandDocs(s *Server, c *client, args [][]byte) {
	var pairs []pair
	table := commandDocTable()
	for _, cm := range s.sortedCommands() {
		if len(args) == 2 || named(cm.Name, args[2:]) {
			pairs = append(pairs, pair{cm.Name, commandDocs(cm, table)})
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
	cm := s.table.Find(call[0])
	if cm != nil && len(cm.Subs) > 0 && len(call) > 1 {
		cm = cm.Sub(call[1])
	}
	var at []keyArg
	ok := false
	if cm != nil && len(cm.Keys) > 0 && core.ArityFits(cm.Arity, len(call)) {
		at, ok = core.KeyIndexes(cm.Keys, len(call), nil)
	}
	switch {
	case cm == nil:
		c.conn.WriteError(errGetKeysCommand)
	case len(cm.Keys) == 0:
		c.conn.WriteError(errGetKeysNoKeys)
	case !core.ArityFits(cm.Arity, len(call)):
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
		c.conn.WriteBulk(call[k.Index])
		if withFlags {
			writeValue(c, flagSet(k.Flags.Names()))
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

func (s *Server) sortedCommands() []*core.Command {
	cmds := make([]*core.Command, 0, s.table.Len())
	for _, cm := range s.table.Names() {
		cmds = append(cmds, cm)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

// writeCommandInfo writes Redis 7's ten-field description of cm: name,
// arity, flags, first key, last key, key step, ACL categories, tips, key
// specs and subcommands. go-redis refuses other lengths.
func writeCommandInfo(c *client, cm *core.Command) {
	c.conn.WriteArray(10)
	c.conn.WriteBulkString(cm.Name)
	c.conn.WriteInt(cm.Arity)
	writeValue(c, flagSet(cm.Flags.Names()))
	c.conn.WriteInt(cm.FirstKey)
	c.conn.WriteInt(cm.LastKey)
	c.conn.WriteInt(cm.KeyStep)
	writeValue(c, flagSet(cm.ACL.Names()))
	c.WriteSetLen(0) // tips
	writeKeySpecs(c, cm.Keys)
	if len(cm.Subs) == 0 {
		c.WriteSetLen(0) // Redis's empty subcommands are a set, the others an array
		return
	}
	c.conn.WriteArray(len(cm.Subs))
	for i := range cm.Subs {
		writeCommandInfo(c, &cm.Subs[i])
	}
}

// writeKeySpecs writes key specs as Redis 7 does: a set of maps.
func writeKeySpecs(c *client, keys []keySpec) {
	specs := make(respSet, len(keys))
	for i, k := range keys {
		specs[i] = []pair{
			{"flags", flagSet(k.Flags.Names())},
			{"begin_search", []pair{{"type", "index"}, {"spec", []pair{{"index", k.Index}}}}},
			{"find_keys", []pair{{"type", "range"}, {"spec", []pair{{"lastkey", k.LastKey}, {"keystep", k.Step}, {"limit", 0}}}}},
		}
	}
	writeValue(c, specs)
}

// commandDocs is COMMAND DOCS' map for cm, with what commandDocTable adds.
func commandDocs(cm *core.Command, table map[string]cmdDoc) []pair {
	group := cm.Group
	if group == "" {
		group = "generic"
	}
	d := table[cm.Name]
	summary := cm.Summary
	if summary == "" {
		summary = d.summary
	}
	docs := []pair{{"summary", summary}, {"since", d.since}, {"group", group}}
	if len(d.args) > 0 {
		docs = append(docs, pair{"arguments", docArgs(d.args)})
	}
	if len(cm.Subs) > 0 {
		subs := make([]pair, len(cm.Subs))
		for i := range cm.Subs {
			subs[i] = pair{cm.Subs[i].Name, commandDocs(&cm.Subs[i], table)}
		}
		docs = append(docs, pair{"subcommands", subs})
	}
	return docs
}
