package introspect

import (
	"sort"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Commands describes a command table to its clients: redis-cli reads
// COMMAND for hints, go-redis for key positions. Its table is set once, at
// New; the commands it describes are whatever the table holds when asked.
type Commands struct {
	table *core.Table
	docs  map[string]Doc
}

// New returns COMMAND over table, documented by docs (Docs and what the
// front adds to them).
func New(table *core.Table, docs map[string]Doc) *Commands {
	return &Commands{table: table, docs: docs}
}

// Commands is COMMAND and its subcommands, as table entries.
func (d *Commands) Commands() []core.Command {
	return []core.Command{{Name: "command", Arity: -1, Run: d.command, Group: "server", Summary: "Describes every command", Subs: []core.Command{
		{Name: "count", Arity: 2, Run: d.count, Summary: "Returns the number of commands"},
		{Name: "info", Arity: -2, Run: d.info, Summary: "Describes the commands named, or all"},
		{Name: "docs", Arity: -2, Run: d.docsCmd, Summary: "Documents the commands named, or all"},
		{Name: "list", Arity: 2, Run: d.list, Summary: "Returns every command's name"},
		{Name: "getkeys", Arity: -3, Run: d.getKeysCmd, Summary: "Extracts the key names from a call of a command"},
		{Name: "getkeysandflags", Arity: -3, Run: d.getKeysAndFlags, Summary: "Extracts the key names and their flags from a call of a command"},
		{Name: "help", Arity: 2, Run: d.help, Summary: "Lists COMMAND's subcommands"},
	}}}
}

func (d *Commands) command(x *core.Session, args [][]byte) {
	cmds := d.sorted()
	x.Out.WriteArray(len(cmds))
	for _, cm := range cmds {
		writeCommandInfo(x, cm)
	}
}

func (d *Commands) count(x *core.Session, args [][]byte) { x.Out.WriteInt(d.table.Len()) }

func (d *Commands) list(x *core.Session, args [][]byte) {
	cmds := d.sorted()
	x.Out.WriteArray(len(cmds))
	for _, cm := range cmds {
		x.Out.WriteBulkString(cm.Name)
	}
}

// info describes the commands named, with a null for each unknown one.
func (d *Commands) info(x *core.Session, args [][]byte) {
	if len(args) == 2 {
		d.command(x, args)
		return
	}
	x.Out.WriteArray(len(args) - 2)
	for _, name := range args[2:] {
		if cm := d.table.Find(name); cm != nil {
			writeCommandInfo(x, cm)
		} else {
			x.Null()
		}
	}
}

// docsCmd is a map from each command named (all, if none) to its docs; unknown ones are left out.
func (d *Commands) docsCmd(x *core.Session, args [][]byte) {
	var pairs []core.Pair
	for _, cm := range d.sorted() {
		if len(args) == 2 || named(cm.Name, args[2:]) {
			pairs = append(pairs, core.Pair{Key: cm.Name, Val: commandDocs(cm, d.docs)})
		}
	}
	core.WriteMap(x, pairs)
}

// Replies of COMMAND GETKEYS, in Redis's words.
const (
	ErrGetKeysCommand = "ERR Invalid command specified"
	ErrGetKeysNoKeys  = "ERR The command has no key arguments"
	ErrGetKeysArity   = "ERR Invalid number of arguments specified for command"
	ErrGetKeysArgs    = "ERR Invalid arguments specified for command"
)

func (d *Commands) getKeysCmd(x *core.Session, args [][]byte) { d.getKeys(x, args[2:], false) }

func (d *Commands) getKeysAndFlags(x *core.Session, args [][]byte) { d.getKeys(x, args[2:], true) }

// getKeys is COMMAND GETKEYS[ANDFLAGS] for the call call, from its command's
// key specs, checked in Redis's order.
func (d *Commands) getKeys(x *core.Session, call [][]byte, withFlags bool) {
	cm := d.table.Find(call[0])
	if cm != nil && len(cm.Subs) > 0 && len(call) > 1 {
		cm = cm.Sub(call[1])
	}
	var at []core.KeyArg
	ok := false
	if cm != nil && len(cm.Keys) > 0 && core.ArityFits(cm.Arity, len(call)) {
		at, ok = core.KeyIndexes(cm.Keys, len(call), nil)
	}
	switch {
	case cm == nil:
		x.Out.WriteError(ErrGetKeysCommand)
	case len(cm.Keys) == 0:
		x.Out.WriteError(ErrGetKeysNoKeys)
	case !core.ArityFits(cm.Arity, len(call)):
		x.Out.WriteError(ErrGetKeysArity)
	case !ok:
		x.Out.WriteError(ErrGetKeysArgs)
	default:
		writeGetKeys(x, call, at, withFlags)
	}
}

// writeGetKeys writes the keys of call at, each with its key spec's flags if withFlags.
func writeGetKeys(x *core.Session, call [][]byte, at []core.KeyArg, withFlags bool) {
	x.Out.WriteArray(len(at))
	for _, k := range at {
		if withFlags {
			x.Out.WriteArray(2)
		}
		x.Out.WriteBulk(call[k.Index])
		if withFlags {
			core.WriteValue(x, core.FlagSet(k.Flags.Names()))
		}
	}
}

// help lists the subcommands as declared, whatever name COMMAND is served under.
func (d *Commands) help(x *core.Session, args [][]byte) { core.WriteHelp(x, &d.Commands()[0]) }

func named(name string, names [][]byte) bool {
	for _, n := range names {
		if core.EqualFold(n, name) {
			return true
		}
	}
	return false
}

// sorted is the table's commands by name.
func (d *Commands) sorted() []*core.Command {
	cmds := make([]*core.Command, 0, d.table.Len())
	for _, cm := range d.table.Names() {
		cmds = append(cmds, cm)
	}
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].Name < cmds[j].Name })
	return cmds
}

// writeCommandInfo writes Redis 7's ten-field description of cm: name,
// arity, flags, first key, last key, key step, ACL categories, tips, key
// specs and subcommands. go-redis refuses other lengths.
func writeCommandInfo(x *core.Session, cm *core.Command) {
	x.Out.WriteArray(10)
	x.Out.WriteBulkString(cm.Name)
	x.Out.WriteInt(cm.Arity)
	core.WriteValue(x, core.FlagSet(cm.Flags.Names()))
	x.Out.WriteInt(cm.FirstKey)
	x.Out.WriteInt(cm.LastKey)
	x.Out.WriteInt(cm.KeyStep)
	core.WriteValue(x, core.FlagSet(cm.ACL.Names()))
	x.WriteSetLen(0) // tips
	writeKeySpecs(x, cm.Keys)
	if len(cm.Subs) == 0 {
		x.WriteSetLen(0) // Redis's empty subcommands are a set, the others an array
		return
	}
	x.Out.WriteArray(len(cm.Subs))
	for i := range cm.Subs {
		writeCommandInfo(x, &cm.Subs[i])
	}
}

// writeKeySpecs writes key specs as Redis 7 does: a set of maps.
func writeKeySpecs(x *core.Session, keys []core.KeySpec) {
	specs := make(core.Set, len(keys))
	for i, k := range keys {
		specs[i] = []core.Pair{
			{Key: "flags", Val: core.FlagSet(k.Flags.Names())},
			{Key: "begin_search", Val: []core.Pair{{Key: "type", Val: "index"}, {Key: "spec", Val: []core.Pair{{Key: "index", Val: k.Index}}}}},
			{Key: "find_keys", Val: []core.Pair{{Key: "type", Val: "range"}, {Key: "spec", Val: []core.Pair{{Key: "lastkey", Val: k.LastKey}, {Key: "keystep", Val: k.Step}, {Key: "limit", Val: 0}}}}},
		}
	}
	core.WriteValue(x, specs)
}

// commandDocs is COMMAND DOCS' map for cm, with what its Doc adds.
func commandDocs(cm *core.Command, table map[string]Doc) []core.Pair {
	group := cm.Group
	if group == "" {
		group = "generic"
	}
	d := table[cm.Name]
	summary := cm.Summary
	if summary == "" {
		summary = d.Summary
	}
	docs := []core.Pair{{Key: "summary", Val: summary}, {Key: "since", Val: d.Since}, {Key: "group", Val: group}}
	if len(d.Args) > 0 {
		docs = append(docs, core.Pair{Key: "arguments", Val: docArgs(d.Args)})
	}
	if len(cm.Subs) > 0 {
		subs := make([]core.Pair, len(cm.Subs))
		for i := range cm.Subs {
			subs[i] = core.Pair{Key: cm.Subs[i].Name, Val: commandDocs(&cm.Subs[i], table)}
		}
		docs = append(docs, core.Pair{Key: "subcommands", Val: subs})
	}
	return docs
}
