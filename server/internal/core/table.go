package core

import (
	"fmt"
	"strings"
)

// MaxName bounds the command names the table looks up; longer ones are
// unknown. It lets Find lower-case a name into a stack buffer.
const MaxName = 32

// Table is the command table: each name it serves and the entry that name
// runs. It is built before the server serves, by Add and Rename, and only
// read afterwards, so it needs no lock.
type Table struct {
	cmds    map[string]*Command
	renamed bool     // Rename renamed some command (see ResolveFor)
	hop     *Command // the command that wraps a peer's requests (Wraps > 0), which ResolveFor tries first for a peer
	ids     int      // the last Command.ID given

	txOpen, txRun [][]byte // the requests that open and run a transaction (TxFrame)
}

// NewTable returns an empty table.
func NewTable() *Table { return &Table{cmds: map[string]*Command{}} }

// Add adds cm under its name. Two with one name are a programmer error.
func (t *Table) Add(cm *Command) {
	if _, dup := t.cmds[cm.Name]; dup {
		panic(fmt.Sprintf("server: command %q registered twice", cm.Name))
	}
	t.cmds[cm.Name] = cm
	if cm.Wraps > 0 {
		t.hop = cm
	}
	if cm.Flags&FlagOpensTx != 0 {
		t.txOpen = [][]byte{[]byte(strings.ToUpper(cm.Name))}
	}
	if cm.Flags&FlagRunsTx != 0 {
		t.txRun = [][]byte{[]byte(strings.ToUpper(cm.Name))}
	}
}

// Register adds cm to the table, with its subcommands named "parent|sub"
// (each with its parent's group and secret unless it has its own), its
// counters, and the Spec that spec returns for each name merged in
// (Declare); spec may be nil when the entries declare everything
// themselves.
func (t *Table) Register(cm Command, spec func(name string) Spec) {
	if _, dup := t.cmds[cm.Name]; dup {
		panic(fmt.Sprintf("server: command %q registered twice", cm.Name))
	}
	t.Add(t.declared(cm, nil, spec))
}

// declared is cm, a subcommand of parent unless that is nil, ready for the
// table.
func (t *Table) declared(cm Command, parent *Command, spec func(string) Spec) *Command {
	t.ids++
	cm.ID = t.ids
	if parent != nil {
		cm.Name = parent.Name + "|" + cm.Name
		if cm.Group == "" {
			cm.Group = parent.Group
		}
		if cm.Secret == nil { // a subcommand's arguments are its parent's
			cm.Secret = parent.Secret
		}
	}
	cm.Stats = new(Stats)
	var sp Spec
	if spec != nil {
		sp = spec(cm.Name)
	}
	cm.Declare(sp)
	subs := cm.Subs
	cm.Subs = make([]Command, len(subs))
	for i := range subs {
		cm.Subs[i] = *t.declared(subs[i], &cm, spec)
	}
	if len(subs) == 0 {
		cm.Subs = nil
	}
	return &cm
}

// Lookup returns the command served under the lower-case name, or nil.
func (t *Table) Lookup(name string) *Command { return t.cmds[name] }

// Len is the number of names the table serves.
func (t *Table) Len() int { return len(t.cmds) }

// Names returns every name the table serves with its command, in no order.
func (t *Table) Names() map[string]*Command { return t.cmds }

// Renamed reports whether Rename renamed some command.
func (t *Table) Renamed() bool { return t.renamed }

// Hop returns the command that wraps a peer's requests, or nil.
func (t *Table) Hop() *Command { return t.hop }

// TxFrame returns the requests that open and run a transaction (the
// entries flagged FlagOpensTx and FlagRunsTx, by their own names, which
// a peer's table serves), for a transaction sent whole to another node;
// nil for one no entry declares. The caller must not change them.
func (t *Table) TxFrame() (open, run [][]byte) { return t.txOpen, t.txRun }

// Find looks name up, ignoring case, without allocating: the compiler
// turns a map index by string(bytes) into a lookup with no copy.
func (t *Table) Find(name []byte) *Command {
	if len(name) > MaxName {
		return nil
	}
	var buf [MaxName]byte
	for i, ch := range name {
		buf[i] = Lower(ch)
	}
	return t.cmds[string(buf[:len(name)])]
}

// Resolve finds the command or subcommand that args name and checks its
// arity. It returns nil and the error reply if there is none or it does
// not fit.
func (t *Table) Resolve(args [][]byte) (*Command, string) {
	cm := t.Find(args[0])
	if cm == nil {
		return nil, UnknownCommand(args)
	}
	if len(cm.Subs) > 0 && len(args) > 1 {
		sub := cm.Sub(args[1])
		if sub == nil {
			return nil, "ERR unknown subcommand '" + QuoteArg(args[1], 128) +
				"'. Try " + strings.ToUpper(cm.Name) + " HELP."
		}
		cm = sub
	}
	if !ArityFits(cm.Arity, len(args)) {
		cm.Stats.Rejected.Add(1)
		return nil, ArityError(cm.Name)
	}
	return cm, ""
}

// ResolveFor is Resolve, taking first the command x.Ahead, which the
// server found for this very request when it parsed the batch ahead,
// then trying the commands x ran last and before it: a pipeline mostly repeats one command or alternates two, and
// comparing a name costs less than the table lookup. A peer's requests alternate the command that wraps them
// (RL.HOP) and the one it wraps, so for a peer that is tried too. Renamed
// commands are served only under their new names, so then every name goes
// to the table.
func (t *Table) ResolveFor(x *Session, args [][]byte) (*Command, string) {
	if cm := x.Ahead; cm != nil {
		x.Ahead = nil // this request's only: a command that dispatches another (RL.HOP) resolves that afresh
		if len(cm.Subs) == 0 && ArityFits(cm.Arity, len(args)) {
			return cm, ""
		}
	}
	if !t.renamed {
		if cm := x.LastCmd.Load(); cm != nil && cm.Calls(args) {
			return cm, ""
		}
		if cm := x.PrevCmd; cm != nil && cm.Calls(args) {
			return cm, ""
		}
		if cm := t.hop; x.Peer && cm != nil && cm.Calls(args) {
			return cm, ""
		}
	}
	return t.Resolve(args)
}

// Rename applies redis.conf's rename-command: each command named by a key
// of renames is served under its value instead, or not at all if the value
// is "" (FLUSHALL "" takes from clients the power to reset every quota at
// once). A command that follows another (FLUSHDB follows FLUSHALL) is
// disabled when that one is renamed, unless renames names it too. Names
// are without case. Replies, COMMAND and the logs keep the command's own
// name, as Redis's do.
func (t *Table) Rename(renames map[string]string) error {
	t.renamed = len(renames) > 0
	moved := map[string]*Command{}
	for old, name := range renames {
		old, name = strings.ToLower(old), strings.ToLower(name)
		cm := t.cmds[old]
		switch {
		case cm == nil:
			return fmt.Errorf("server: rename-command: no command %q", old)
		case len(name) > MaxName:
			return fmt.Errorf("server: rename-command: %q is longer than %d bytes", name, MaxName)
		}
		delete(t.cmds, old)
		if name != "" {
			moved[name] = cm
		}
	}
	for _, cm := range t.cmds {
		if cm.Follows != "" && renamed(renames, cm.Follows) && !renamed(renames, cm.Name) {
			delete(t.cmds, cm.Name)
		}
	}
	for name, cm := range moved {
		if _, taken := t.cmds[name]; taken {
			return fmt.Errorf("server: rename-command: %q names a command already", name)
		}
		t.cmds[name] = cm
	}
	return nil
}

// renamed reports whether renames names the command called name.
func renamed(renames map[string]string, name string) bool {
	for old := range renames {
		if strings.EqualFold(old, name) {
			return true
		}
	}
	return false
}

// ArityError is Redis 7's reply to a wrong argument count. name is the
// command's full lower-case name, such as "rl.slide" or "client|setname".
func ArityError(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// UnknownCommand words the reply to an unknown command as Redis 7 does:
// the name, then the arguments quoted, until 128 bytes of them have been shown.
func UnknownCommand(args [][]byte) string {
	var b strings.Builder
	b.WriteString("ERR unknown command '" + QuoteArg(args[0], 128) + "', with args beginning with: ")
	shown := 0
	for _, a := range args[1:] {
		if shown >= 128 {
			break
		}
		q := "'" + QuoteArg(a, 128-shown) + "' "
		shown += len(q)
		b.WriteString(q)
	}
	return b.String()
}

// QuoteArg returns at most n bytes of a, with CR and LF turned into spaces
// so that the error stays on one line, as Redis's rejectCommandFormat does.
func QuoteArg(a []byte, n int) string {
	b := append([]byte(nil), a[:min(len(a), max(n, 0))]...) // a copy: a belongs to the request
	for i, ch := range b {
		if ch == '\r' || ch == '\n' {
			b[i] = ' '
		}
	}
	return string(b)
}
