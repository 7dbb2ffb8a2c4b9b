package server

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
)

// Replies of the ACL checks, in Redis 7.0's words.
const (
	errNoPermKey = "NOPERM this user has no permissions to access one of the keys used as arguments"
	errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
)

func errNoPermCmd(name string) string {
	return "NOPERM this user has no permissions to run the '" + name + "' command"
}

// mayRun returns "" if u may run cm with args, or the NOPERM reply.
func mayRun(u *auth.User, cm *core.Command, args [][]byte) string {
	if !u.MayRun(cm.Name) {
		return errNoPermCmd(cm.Name)
	}
	if cm.FirstKey <= 0 {
		return ""
	}
	write := cm.Flags&flagWrite != 0
	last := cm.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cm.FirstKey; i <= last && i < len(args); i += max(cm.KeyStep, 1) {
		if !u.MayUseKey(args[i], write) {
			return errNoPermKey
		}
	}
	return ""
}

// aclCommands is ACL WHOAMI|LIST|USERS|LOAD|HELP.
func aclCommands() []command {
	return []command{
		{name: "acl", arity: -2, secret: secretNone, group: "server", summary: "Users from the ACL file", subs: []command{
			{name: "whoami", arity: 2, run: cmdACLWhoami, summary: "Returns the connection's user name"},
			{name: "list", arity: 2, run: cmdACLList, summary: "Returns every user's rules, passwords as hashes"},
			{name: "users", arity: 2, run: cmdACLUsers, summary: "Returns the users' names"},
			{name: "load", arity: 2, run: cmdACLLoad, summary: "Reads the ACL file again"},
			{name: "help", arity: 2, run: func(s *Server, c *client, _ [][]byte) { writeHelp(c, aclCommands()[0]) }, summary: "Lists ACL's subcommands"},
		}},
	}
}

func cmdACLWhoami(s *Server, c *client, args [][]byte) {
	if c.user == nil {
		c.conn.WriteBulkString("default")
		return
	}
	c.conn.WriteBulkString(c.user.Name())
}

func cmdACLList(s *Server, c *client, args [][]byte) {
	a := s.acl.Load()
	if a == nil {
		writeList(c, []string{s.defaultUserRules()})
		return
	}
	var out []string
	for _, n := range a.Names() {
		out = append(out, a.User(n).Describe())
	}
	writeList(c, out)
}

// defaultUserRules describes the default user when there is no ACL file.
func (s *Server) defaultUserRules() string {
	if p := s.requirePass(); p != "" {
		h := sha256.Sum256([]byte(p))
		return "user default on #" + hex.EncodeToString(h[:]) + " ~* &* +@all"
	}
	return "user default on nopass ~* &* +@all"
}

func cmdACLUsers(s *Server, c *client, args [][]byte) {
	a := s.acl.Load()
	if a == nil {
		writeList(c, []string{"default"})
		return
	}
	writeList(c, a.Names())
}

// cmdACLLoad reads the ACL file again. Connections keep the user they
// authenticated as until they authenticate again, as in Redis before 7.2.
func cmdACLLoad(s *Server, c *client, args [][]byte) {
	if s.cfg.ACLFile == "" {
		c.conn.WriteError(errNoACLFile)
		return
	}
	a, err := auth.Load(s.cfg.ACLFile)
	if err != nil {
		c.conn.WriteError("ERR " + err.Error())
		return
	}
	s.acl.Store(a)
	c.conn.WriteString("OK")
}

// authenticate checks [user] pass. It returns the user (nil: the default
// user without an ACL file) and whether the credentials are right.
func (s *Server) authenticate(cred [][]byte) (*auth.User, bool) {
	pass := cred[len(cred)-1]
	name := []byte("default")
	if len(cred) == 2 {
		name = cred[0]
	}
	a := s.acl.Load()
	if a == nil || (a.User("default") == nil && bytes.Equal(name, []byte("default"))) {
		return nil, s.checkAuth(cred)
	}
	u := a.User(string(name))
	if u == nil || !u.On() {
		sha256.Sum256(pass) // as long as a real check, so that timing tells no names
		return nil, false
	}
	return u, u.CheckPass(pass)
}

// defaultUser is the user a new connection starts as, and whether it is
// authenticated already (the default user needs no password).
func (s *Server) defaultUser() (*auth.User, bool) {
	if a := s.acl.Load(); a != nil {
		if u := a.User("default"); u != nil {
			return u, u.On() && u.NoPass()
		}
	}
	return nil, s.requirePass() == ""
}

// ACLFileHasPassword loads the ACL file at path and reports whether no one
// can use the server without a password: every user it turns on needs one,
// and so does the default user (the file's, or else requirepass). Protected
// mode counts that as a password. It returns the file's error, if any.
func ACLFileHasPassword(path, requirePass string) (bool, error) {
	a, err := auth.Load(path)
	if err != nil {
		return false, err
	}
	return a.NeedsPasswords(requirePass), nil
}
