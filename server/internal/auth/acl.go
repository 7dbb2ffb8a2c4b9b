package auth

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/rlstore/rlstore/server/internal/glob"
)

// User is one user of an ACL file. Its passwords are kept only as SHA-256
// hashes. It never changes once loaded (ACL LOAD builds new ones), so it is
// safe for use by many goroutines.
type User struct {
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

// ACL is the users of an ACL file, swapped whole by ACL LOAD.
type ACL struct {
	users map[string]*User
}

// Load reads an ACL file in redis-server's aclfile syntax, one user a line:
// user NAME [on|off] [>password|#sha256hex|nopass] [~pattern|%R~pattern|%W~pattern|allkeys]
// [+@all|-@all|allcommands|nocommands|+cmd|-cmd|+cmd|sub]. Blank lines and # comments are skipped.
func Load(path string) (*ACL, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: aclfile: %w", err)
	}
	defer f.Close()
	a := &ACL{users: map[string]*User{}}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		u, err := parseUser(strings.Fields(line))
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

func parseUser(f []string) (*User, error) {
	if len(f) < 2 || f[0] != "user" {
		return nil, errors.New("a line must be user, a name and rules")
	}
	u := &User{name: f[1], cmds: map[string]bool{}, rules: []string{}}
	for _, r := range f[2:] {
		if err := u.apply(r); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// apply applies one rule, as ACL SETUSER would.
func (u *User) apply(r string) error {
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
func (u *User) applyKeyPerm(r string) error {
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
func (u *User) applyCommand(r string) error {
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

// CheckPass reports whether pass is one of u's passwords, comparing hashes
// in constant time.
func (u *User) CheckPass(pass []byte) bool {
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

// MayRun looks a command up: the subcommand's rule, then its command's, then @all.
func (u *User) MayRun(name string) bool {
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

// MayUseKey reports whether u may read key, or write it if write is set.
func (u *User) MayUseKey(key []byte, write bool) bool {
	for _, kp := range u.keys {
		if (write && !kp.write) || (!write && !kp.read) {
			continue
		}
		if glob.Match(kp.glob, key) {
			return true
		}
	}
	return false
}

// Describe is the user as ACL LIST shows it.
func (u *User) Describe() string {
	return "user " + u.name + " " + strings.Join(u.rules, " ")
}

// Names returns the users' names, sorted.
func (a *ACL) Names() []string {
	out := make([]string, 0, len(a.users))
	for n := range a.users {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// User returns the user called name, or nil.
func (a *ACL) User(name string) *User { return a.users[name] }

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// On reports whether the user may authenticate at all.
func (u *User) On() bool { return u.on }

// NoPass reports whether any password authenticates the user.
func (u *User) NoPass() bool { return u.nopass }

// NeedsPasswords reports whether no one can use the server without a
// password: every user the file turns on needs one, and so does the default
// user (the file's, or else requirePass).
func (a *ACL) NeedsPasswords(requirePass string) bool {
	for _, u := range a.users {
		if u.on && (u.nopass || len(u.hashes) == 0) {
			return false
		}
	}
	return a.users["default"] != nil || requirePass != ""
}
