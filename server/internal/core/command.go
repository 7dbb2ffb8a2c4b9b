package core

import "encoding/binary"

// Command is one entry of the command table: everything the server must
// know about a command, declared, so that no concern switches on its name
// (as Redis's struct redisCommand carries its flags, ACL categories, key
// specs and getkeys_proc).
type Command struct {
	Name  string // lower case, as the table looks it up; "parent|sub" for a subcommand
	Arity int    // Redis style: n > 0 exactly n arguments with the name, n < 0 at least -n
	Flags Flags
	Run   RunFunc   // nil for a command with subcommands
	Subs  []Command // subcommands, chosen by the second argument

	// For COMMAND and COMMAND DOCS. Key positions count the name as 0;
	// Declare sets them from the key specs.
	FirstKey, LastKey, KeyStep int
	Group, Summary             string
	ACL                        Cats      // set by Declare: the Spec's and those the flags imply
	Keys                       []KeySpec // set by Declare, unless the entry declares its own

	// Follows names the command whose rename this one takes when it has
	// none of its own: renaming that command disables this one.
	Follows string

	// What the concerns around a command must know of it beyond its flags
	// and key specs.
	Peek    PeekFunc    // the command made a peek, while the log is broken; nil: it has none
	Changes ChangesFunc // the keys a write may change, taken back if its commit fails; nil: not taken back key by key
	Blind   BlindFunc   // its reply when no node can know the key's state (--owner-unreachable allow|deny); nil: the error
	Wraps   int         // the argument naming the command this one runs for a peer (RL.HOP: 3); 0: none
	Secret  SecretFunc  // its arguments may be passwords or proofs: the slow log keeps its name only, and MONITOR hides what this returns; nil: none

	Stats *Stats // INFO commandstats; shared by a renamed command

	// ID numbers the entries Table.Register made, from 1 in registration
	// order, subcommands included (0: none), so that a concern can keep its
	// own data of each command in a slice, as Redis's ACL keeps its bitmaps
	// by command id.
	ID int
}

// RunFunc runs a command on a connection's session, writing its reply
// through the session's Out.
type RunFunc func(x *Session, args [][]byte)

// PeekFunc returns a decision command's arguments made into a peek, and
// whether the client asked for a peek itself; nil if it cannot peek with
// these arguments (CL.THROTTLE peeks only with quantity 0).
type PeekFunc func(args [][]byte) (peek [][]byte, asked bool)

// ChangesFunc returns the keys a call of a write command may change, and
// the route they share if it is not each key itself.
type ChangesFunc func(args [][]byte) (keys [][]byte, route []byte)

// SecretFunc returns the arguments of a call that MONITOR shows as
// "(redacted)".
type SecretFunc func(args [][]byte) Hidden

// Hidden is the range of a command's arguments, From to To (exclusive),
// that MONITOR shows as "(redacted)": passwords, a handshake's proofs.
// The zero value hides none.
type Hidden struct{ From, To int }

// BlindFunc is a decision made without the key's state: admitted with
// nothing known, or denied with a wait to retry after.
type BlindFunc func(allow bool) []int64

// Declare adds sp to cm's entry; an entry may declare its categories and
// key specs itself instead (a decision's does, so that one entry is all a
// new one needs). Key positions written in the entry must agree with the
// key specs: two that differ are a programmer error.
func (cm *Command) Declare(sp Spec) {
	cm.Flags |= sp.Flags
	cm.ACL = Implied(cm.Flags, cm.ACL|sp.ACL)
	keys := sp.Keys
	if keys == nil {
		keys = cm.Keys
	}
	if keys == nil {
		return
	}
	first, last, step := LegacyRange(keys)
	if cm.FirstKey != 0 && (cm.FirstKey != first || cm.LastKey != last || cm.KeyStep != step) {
		panic("core: " + cm.Name + "'s key positions differ from its key specs")
	}
	cm.Keys, cm.FirstKey, cm.LastKey, cm.KeyStep = keys, first, last, step
}

// Sub returns cm's subcommand called name, ignoring case, or nil.
func (cm *Command) Sub(name []byte) *Command {
	for i := range cm.Subs {
		sc := &cm.Subs[i]
		if EqualFold(name, sc.Name[len(cm.Name)+1:]) {
			return sc
		}
	}
	return nil
}

// Calls reports whether args call cm, a command without subcommands, and
// fit its arity.
func (cm *Command) Calls(args [][]byte) bool {
	return len(cm.Subs) == 0 && ArityFits(cm.Arity, len(args)) && EqualFold(args[0], cm.Name)
}

// EqualFold reports whether b equals the lower-case s, ignoring ASCII case.
// Names of 8 bytes or more are compared a word at a time (the last word
// overlapping the one before): every command's name is compared at least
// once a request, and byte by byte "RL.ACQUIRE" took about 90 instructions.
func EqualFold(b []byte, s string) bool {
	n := len(b)
	if n != len(s) {
		return false
	}
	if n >= 8 {
		for i := 0; i < n-8; i += 8 {
			if lowerWord(word(b, i)) != wordString(s, i) {
				return false
			}
		}
		return lowerWord(word(b, n-8)) == wordString(s, n-8)
	}
	for i := range b {
		if Lower(b[i]) != s[i] {
			return false
		}
	}
	return true
}

// lowerWord is Lower of each byte of x: each byte from 'A' to 'Z' gains
// 0x20, found without a branch (the high bit of a byte's 7 low bits plus
// 0x80-'A' says it is at least 'A', plus 0x80-'Z'-1 that it is above 'Z';
// neither sum carries into the next byte).
func lowerWord(x uint64) uint64 {
	const ones = 0x0101010101010101
	low := x & (0x7f * ones)
	atLeastA := low + (0x80-'A')*ones
	aboveZ := low + (0x80-'Z'-1)*ones
	upper := atLeastA &^ aboveZ &^ x & (0x80 * ones)
	return x | upper>>2
}

// word is the 8 bytes of b from i, little-endian.
func word(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i : i+8]) }

// wordString is word of a string.
func wordString(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// Lower is c in lower case, if it is an ASCII letter.
func Lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// ArityFits reports whether n arguments, the name included, fit arity.
func ArityFits(arity, n int) bool {
	if arity >= 0 {
		return n == arity
	}
	return n >= -arity
}
