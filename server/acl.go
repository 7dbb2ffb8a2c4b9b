package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
)

// Replies of the ACL checks, in Redis 7.0's words.
const (
	errNoPermKey = "NOPERM this user has no permissions to access one of the keys used as arguments"
	errNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
)

func errNoPermCmd(name string) string {
	return "NOPERM this user has no permissions to run the '" + name + "' command"
}

// aclUser is one user of an ACL file. Its passwords are kept only as
// SHA-256 hashes. It never changes once loaded: ACL LOAD builds new ones.
type aclUser struct {
	name    string
	on      bool
	nopass  bool
	hashes  [][sha256.Size]byte
	allCmds bool            // the last +@all or -@all
	cmds    map[string]bool // overrides of allCmds by command ("client") or subcommand ("client|list") name
	keys    []keyPattern
	rules   []string // the rules as read, with passwords as hashes, for ACL LIST
}

// keyPattern is a ~pattern (read and write), %R~pattern or %W~pattern.
type keyPattern struct {
	glob        []byte
	read, write bool
}

// acl is the users of an ACL file, swapped whole by ACL LOAD.
type acl struct {
	users map[string]*aclUser
}

// loadACL reads an ACL file in redis-server's aclfile syntax, one user a line:
// user NAME [on|off] [>password|#sha256hex|nopass] [~pattern|%R~pattern|%W~pattern|allkeys]
// [+@all|-@all|allcommands|nocommands|+cmd|-cmd|+cmd|sub]. Blank lines and # comments are skipped.
func loadACL(path string) (*acl, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: aclfile: %w", err)
	}
	defer f.Close()
	a := &acl{users: map[string]*aclUser{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		u, err := parseACLUser(strings.Fields(line))
		if err != nil {
			return nil, fmt.Errorf("server: aclfile %s line %d: %w", path, n, err)
		}
		if a.users[u.name] != nil {
			return nil, fmt.Errorf("server: aclfile %s line %d: user %q is defined twice", path, n, u.name)
		}
		a.users[u.name] = u
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("server: aclfile: %w", err)
	}
	return a, nil
}

func parseACLUser(f []string) (*aclUser, error) {
	if len(f) < 2 || f[0] != "user" {
		return nil, errors.New("a line must be user, a name and rules")
	}
	u := &aclUser{name: f[1], cmds: map[string]bool{}, rules: []string{}}
	for _, r := range f[2:] {
		if err := u.apply(r); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// apply applies one rule, as ACL SETUSER would.
func (u *aclUser) apply(r string) error {
	lr := strings.ToLower(r)
	switch {
	case lr == "on" || lr == "off":
		u.on = lr == "on"
	case lr == "nopass":
		u.nopass, u.hashes = true, nil
	case lr == "resetpass":
		u.nopass, u.hashes = false, nil
	case strings.HasPrefix(r, ">"):
		u.nopass = false
		h := sha256.Sum256([]byte(r[1:]))
		u.hashes = append(u.hashes, h)
		r = "#" + hex.EncodeToString(h[:]) // the password itself is kept nowhere
	case strings.HasPrefix(r, "#"):
		b, err := hex.DecodeString(r[1:])
		if err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%q is not # and a SHA-256 hash in hex", r)
		}
		u.nopass = false
		u.hashes = append(u.hashes, [sha256.Size]byte(b))
	case lr == "allkeys" || r == "~*":
		u.keys = append(u.keys, keyPattern{glob: []byte("*"), read: true, write: true})
	case lr == "resetkeys":
		u.keys = nil
	case strings.HasPrefix(r, "~"):
		u.keys = append(u.keys, keyPattern{glob: []byte(r[1:]), read: true, write: true})
	case strings.HasPrefix(r, "%"):
		return u.applyKeyPerm(r)
	case lr == "+@all" || lr == "allcommands" || lr == "-@all" || lr == "nocommands":
		u.allCmds = lr == "+@all" || lr == "allcommands"
		clear(u.cmds)
	case strings.HasPrefix(r, "+") || strings.HasPrefix(r, "-"):
		return u.applyCommand(lr)
	case lr == "resetchannels" || strings.HasPrefix(r, "&") || lr == "allchannels":
		// channels are not limited: rlstore's pub/sub carries only invalidations
	default:
		return fmt.Errorf("unknown or unsupported ACL rule %q", r)
	}
	u.rules = append(u.rules, r)
	return nil
}

// applyKeyPerm applies %R~pattern, %W~pattern or %RW~pattern.
func (u *aclUser) applyKeyPerm(r string) error {
	perm, glob, ok := strings.Cut(r[1:], "~")
	if !ok || perm == "" {
		return fmt.Errorf("%q is not %%R~pattern, %%W~pattern or %%RW~pattern", r)
	}
	kp := keyPattern{glob: []byte(glob)}
	for _, ch := range strings.ToUpper(perm) {
		switch ch {
		case 'R':
			kp.read = true
		case 'W':
			kp.write = true
		default:
			return fmt.Errorf("%q: unknown key permission %q", r, ch)
		}
	}
	u.keys = append(u.keys, kp)
	u.rules = append(u.rules, r)
	return nil
}

// applyCommand applies +name or -name. A rule on a command replaces every
// rule on its subcommands, as in Redis; only the category @all is known.
func (u *aclUser) applyCommand(r string) error {
	allow, name := r[0] == '+', r[1:]
	if strings.HasPrefix(name, "@") {
		return fmt.Errorf("unknown ACL category %q: rlstore knows only @all", name)
	}
	if name == "" {
		return fmt.Errorf("ACL rule %q names no command", r)
	}
	if !strings.Contains(name, "|") {
		for k := range u.cmds {
			if strings.HasPrefix(k, name+"|") {
				delete(u.cmds, k)
			}
		}
	}
	u.cmds[name] = allow
	u.rules = append(u.rules, r)
	return nil
}

// checkPass reports whether pass is one of u's passwords, comparing hashes
// in constant time.
func (u *aclUser) checkPass(pass []byte) bool {
	if u.nopass {
		return true
	}
	h := sha256.Sum256(pass)
	ok := 0
	for i := range u.hashes {
		ok |= subtle.ConstantTimeCompare(h[:], u.hashes[i][:])
	}
	return ok == 1
}

// may returns "" if u may run cm with args, or the NOPERM reply.
func (u *aclUser) may(cm *command, args [][]byte) string {
	if !u.mayRun(cm.name) {
		return errNoPermCmd(cm.name)
	}
	if cm.firstKey <= 0 {
		return ""
	}
	write := cm.flags&flagWrite != 0
	last := cm.lastKey
	if last < 0 {
		last += len(args)
	}
	for i := cm.firstKey; i <= last && i < len(args); i += max(cm.keyStep, 1) {
		if !u.mayUseKey(args[i], write) {
			return errNoPermKey
		}
	}
	return ""
}

// mayRun looks a command up: the subcommand's rule, then its command's, then @all.
func (u *aclUser) mayRun(name string) bool {
	if ok, set := u.cmds[name]; set {
		return ok
	}
	if parent, _, isSub := strings.Cut(name, "|"); isSub {
		if ok, set := u.cmds[parent]; set {
			return ok
		}
	}
	return u.allCmds
}

func (u *aclUser) mayUseKey(key []byte, write bool) bool {
	for _, kp := range u.keys {
		if (write && !kp.write) || (!write && !kp.read) {
			continue
		}
		if globMatch(kp.glob, key) {
			return true
		}
	}
	return false
}

// describe is the user as ACL LIST shows it.
func (u *aclUser) describe() string {
	return "user " + u.name + " " + strings.Join(u.rules, " ")
}

// names returns the users' names, sorted.
func (a *acl) names() []string {
	out := make([]string, 0, len(a.users))
	for n := range a.users {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
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
	c.conn.WriteBulkString(c.user.name)
}

func cmdACLList(s *Server, c *client, args [][]byte) {
	a := s.acl.Load()
	if a == nil {
		writeList(c, []string{s.defaultUserRules()})
		return
	}
	var out []string
	for _, n := range a.names() {
		out = append(out, a.users[n].describe())
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
	writeList(c, a.names())
}

// cmdACLLoad reads the ACL file again. Connections keep the user they
// authenticated as until they authenticate again, as in Redis before 7.2.
func cmdACLLoad(s *Server, c *client, args [][]byte) {
	if s.cfg.ACLFile == "" {
		c.conn.WriteError(errNoACLFile)
		return
	}
	a, err := loadACL(s.cfg.ACLFile)
	if err != nil {
		c.conn.WriteError("ERR " + err.Error())
		return
	}
	s.acl.Store(a)
	c.conn.WriteString("OK")
}

// authenticate checks [user] pass. It returns the user (nil: the default
// user without an ACL file) and whether the credentials are right.
func (s *Server) authenticate(cred [][]byte) (*aclUser, bool) {
	pass := cred[len(cred)-1]
	name := []byte("default")
	if len(cred) == 2 {
		name = cred[0]
	}
	a := s.acl.Load()
	if a == nil || (a.users["default"] == nil && bytes.Equal(name, []byte("default"))) {
		return nil, s.checkAuth(cred)
	}
	u := a.users[string(name)]
	if u == nil || !u.on {
		sha256.Sum256(pass) // as long as a real check, so that timing tells no names
		return nil, false
	}
	return u, u.checkPass(pass)
}

// defaultUser is the user a new connection starts as, and whether it is
// authenticated already (the default user needs no password).
func (s *Server) defaultUser() (*aclUser, bool) {
	if a := s.acl.Load(); a != nil {
		if u := a.users["default"]; u != nil {
			return u, u.on && u.nopass
		}
	}
	return nil, s.requirePass() == ""
}

// ACLFileHasPassword loads the ACL file at path and reports whether no one
// can use the server without a password: every user it turns on needs one,
// and so does the default user (the file's, or else requirepass). Protected
// mode counts that as a password. It returns the file's error, if any.
func ACLFileHasPassword(path, requirePass string) (bool, error) {
	a, err := loadACL(path)
	if err != nil {
		return false, err
	}
	for _, u := range a.users {
		if u.on && (u.nopass || len(u.hashes) == 0) {
			return false, nil
		}
	}
	return a.users["default"] != nil || requirePass != "", nil
}
