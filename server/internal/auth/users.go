package auth

import (
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync/atomic"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Replies of the ACL checks, in Redis 7.0's words.
const (
	ErrNoPermKey = "NOPERM this user has no permissions to access one of the keys used as arguments"
	ErrNoACLFile = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration."
)

// errNoPermCmd is the reply to a command the user may not run.
func errNoPermCmd(name string) string {
	return "NOPERM this user has no permissions to run the '" + name + "' command"
}

// Users is who may use the server: the ACL file's users, or without one
// the default user and requirepass. Each session's user is in a slot of
// the session only Users reaches. Its methods are safe for concurrent use;
// those that take a session run on the session's goroutine.
type Users struct {
	file  string                 // the ACL file; "" for none
	pass  atomic.Pointer[string] // requirepass, which CONFIG SET can change
	acl   atomic.Pointer[ACL]    // the ACL file's users; nil without one
	slot  core.Slot[Conn]
	login logins // AUTH and HELLO (login.go)
}

// Conn is one connection's identity.
type Conn struct {
	User  *User  // the ACL file's user it authenticated as; nil: the default user without an ACL file
	Addr  string // the client's address, which the guard counts wrong passwords by
	fails int    // wrong passwords sent, for maxAuthFailures
}

// NewUsers loads the ACL file, if file is not "", and keeps each
// session's user in a slot of slots.
func NewUsers(file, requirePass string, slots *core.Slots) (*Users, error) {
	u := &Users{file: file, slot: core.NewSlot[Conn](slots)}
	u.pass.Store(&requirePass)
	if file != "" {
		a, err := Load(file)
		if err != nil {
			return nil, err
		}
		u.acl.Store(a)
	}
	return u, nil
}

// RequirePass is the default user's password without an ACL file; "" for none.
func (u *Users) RequirePass() string { return *u.pass.Load() }

// SetRequirePass changes it. Connections already authenticated stay so, as in Redis.
func (u *Users) SetRequirePass(p string) { u.pass.Store(&p) }

// ACL is the ACL file's users, or nil without one.
func (u *Users) ACL() *ACL { return u.acl.Load() }

// Open starts x, a client at addr, as the default user, authenticated if
// that user needs no password.
func (u *Users) Open(x *core.Session, addr string) {
	user, authed := u.defaultUser()
	u.slot.Set(x, &Conn{User: user, Addr: addr})
	x.Authed, x.Limited = authed, user != nil
}

// Login makes x authenticated as user (nil: the default user without an
// ACL file, whose rules are every command on every key).
func (u *Users) Login(x *core.Session, user *User) {
	if c := u.slot.Get(x); c != nil {
		c.User = user
	} else {
		u.slot.Set(x, &Conn{User: user})
	}
	x.Authed, x.Limited = true, user != nil
}

// Of is x's user: nil for the default user without an ACL file.
func (u *Users) Of(x *core.Session) *User {
	if c := u.slot.Get(x); c != nil {
		return c.User
	}
	return nil
}

// defaultUser is the user a new connection starts as, and whether it is
// authenticated already (the default user needs no password).
func (u *Users) defaultUser() (*User, bool) {
	if a := u.ACL(); a != nil {
		if du := a.User("default"); du != nil {
			return du, du.On() && du.NoPass()
		}
	}
	return nil, u.RequirePass() == ""
}

// Authenticate checks [user] pass. It returns the user (nil: the default
// user without an ACL file) and whether the credentials are right.
func (u *Users) Authenticate(cred [][]byte) (*User, bool) {
	pass := cred[len(cred)-1]
	name := []byte("default")
	if len(cred) == 2 {
		name = cred[0]
	}
	a := u.ACL()
	if a == nil || (a.User("default") == nil && bytes.Equal(name, []byte("default"))) {
		return nil, u.checkPass(cred)
	}
	user := a.User(string(name))
	if user == nil || !user.On() {
		sha256.Sum256(pass) // as long as a real check, so that timing tells no names
		return nil, false
	}
	return user, user.CheckPass(pass)
}

// checkPass reports whether [user] pass is the default user's password,
// comparing in constant time.
func (u *Users) checkPass(cred [][]byte) bool {
	pass := cred[len(cred)-1]
	if len(cred) == 2 && string(cred[0]) != "default" {
		return false
	}
	want := u.RequirePass()
	return want == "" || subtle.ConstantTimeCompare(pass, []byte(want)) == 1
}

// Permit returns "" if x's user may run cm with args, or the NOPERM
// reply: the pipeline's core.Permitter.
func (u *Users) Permit(x *core.Session, cm *core.Command, args [][]byte) string {
	return MayRun(u.Of(x), cm, args)
}

// MayRun returns "" if user may run cm with args, or the NOPERM reply.
func MayRun(user *User, cm *core.Command, args [][]byte) string {
	if !user.MayRun(cm.Name) {
		return errNoPermCmd(cm.Name)
	}
	if cm.FirstKey <= 0 {
		return ""
	}
	write := cm.Flags&core.FlagWrite != 0
	last := cm.LastKey
	if last < 0 {
		last += len(args)
	}
	for i := cm.FirstKey; i <= last && i < len(args); i += max(cm.KeyStep, 1) {
		if !user.MayUseKey(args[i], write) {
			return ErrNoPermKey
		}
	}
	return ""
}

// defaultRules describes the default user when there is no ACL file.
func (u *Users) defaultRules() string {
	if p := u.RequirePass(); p != "" {
		h := sha256.Sum256([]byte(p))
		return "user default on #" + hex.EncodeToString(h[:]) + " ~* &* +@all"
	}
	return "user default on nopass ~* &* +@all"
}
