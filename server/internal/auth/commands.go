package auth

import (
	"github.com/rlstore/rlstore/server/internal/core"
)

// Commands are ACL WHOAMI|LIST|USERS|LOAD|HELP.
func (u *Users) Commands() []core.Command {
	const nls = core.FlagNoScript | core.FlagLoading | core.FlagStale
	admin := core.FlagAdmin | nls
	return []core.Command{
		{Name: "acl", Arity: -2, Secret: core.HideNone, Group: "server", Summary: "Users from the ACL file", Subs: []core.Command{
			{Name: "whoami", Arity: 2, Flags: nls, Run: u.whoami, Summary: "Returns the connection's user name"},
			{Name: "list", Arity: 2, Flags: admin, Run: u.list, Summary: "Returns every user's rules, passwords as hashes"},
			{Name: "users", Arity: 2, Flags: admin, Run: u.users, Summary: "Returns the users' names"},
			{Name: "load", Arity: 2, Flags: admin, Run: u.load, Summary: "Reads the ACL file again"},
			{Name: "help", Arity: 2, Flags: core.FlagLoading | core.FlagStale, Run: u.help, Summary: "Lists ACL's subcommands"},
		}},
	}
}

func (u *Users) whoami(x *core.Session, _ [][]byte) {
	if user := u.Of(x); user != nil {
		x.Out.WriteBulkString(user.Name())
		return
	}
	x.Out.WriteBulkString("default")
}

func (u *Users) list(x *core.Session, _ [][]byte) {
	a := u.ACL()
	if a == nil {
		writeList(x, []string{u.defaultRules()})
		return
	}
	var out []string
	for _, n := range a.Names() {
		out = append(out, a.User(n).Describe())
	}
	writeList(x, out)
}

func (u *Users) users(x *core.Session, _ [][]byte) {
	a := u.ACL()
	if a == nil {
		writeList(x, []string{"default"})
		return
	}
	writeList(x, a.Names())
}

// load reads the ACL file again. Connections keep the user they
// authenticated as until they authenticate again, as in Redis before 7.2.
func (u *Users) load(x *core.Session, _ [][]byte) {
	if u.file == "" {
		x.Out.WriteError(ErrNoACLFile)
		return
	}
	a, err := Load(u.file)
	if err != nil {
		x.Out.WriteError("ERR " + err.Error())
		return
	}
	u.acl.Store(a)
	x.Out.WriteString("OK")
}

func (u *Users) help(x *core.Session, _ [][]byte) { core.WriteHelp(x, &u.Commands()[0]) }

func writeList(x *core.Session, v []string) {
	x.Out.WriteArray(len(v))
	for _, s := range v {
		x.Out.WriteBulkString(s)
	}
}
