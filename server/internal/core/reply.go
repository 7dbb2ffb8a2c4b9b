package core

import (
	"fmt"
	"strconv"
	"strings"
)

// The connection's writers write RESP2. These write the headers of the
// RESP3 frames rlstore needs with WriteRaw when the client has said HELLO
// 3, and the RESP2 shape that clients of that version expect otherwise.

// WriteMapLen writes the header of a map of n pairs; the caller then
// writes 2n values, key first: a RESP3 map for a RESP3 client, else the
// flat array of keys and values that RESP2 clients read maps from.
func (x *Session) WriteMapLen(n int) {
	if x.Proto == 3 {
		x.WriteHeader('%', n)
		return
	}
	x.Out.WriteArray(2 * n)
}

// WriteSetLen writes the header of a set of n elements: a RESP3 set for a
// RESP3 client, else an array.
func (x *Session) WriteSetLen(n int) {
	if x.Proto == 3 {
		x.WriteHeader('~', n)
		return
	}
	x.Out.WriteArray(n)
}

// WriteHeader writes a RESP header such as "%3\r\n" without allocating.
func (x *Session) WriteHeader(kind byte, n int) {
	var b [24]byte
	h := strconv.AppendInt(append(b[:0], kind), int64(n), 10)
	x.Out.WriteRaw(append(h, '\r', '\n'))
}

// WriteHelp replies to a HELP subcommand of cm with one line per
// subcommand, named as declared (a registered subcommand's name without
// its "parent|").
func WriteHelp(x *Session, cm *Command) {
	x.Out.WriteArray(len(cm.Subs))
	for _, sc := range cm.Subs {
		name := sc.Name[strings.LastIndexByte(sc.Name, '|')+1:]
		x.Out.WriteString(strings.ToUpper(name) + ": " + sc.Summary)
	}
}

// Pair is one key and value of a map reply. Val is a string, []byte, int,
// int64, nil, []string, []any, FlagSet, Set or a nested []Pair.
type Pair struct {
	Key string
	Val any
}

// FlagSet is a set of status replies, the form of every list of flags
// Redis sends: command flags, ACL categories, argument and key spec flags.
// redis-cli 7 asserts the status type and aborts on a bulk string.
type FlagSet []string

// Set is a set of values: a RESP3 set, an array in RESP2.
type Set []any

// WriteMap writes pairs as a map: a RESP3 map for a RESP3 client, else the
// flat array of keys and values that RESP2 clients read maps from.
// HELLO, CONFIG GET, COMMAND DOCS and RL.INFO reply with it.
func WriteMap(x *Session, pairs []Pair) {
	x.WriteMapLen(len(pairs))
	for _, p := range pairs {
		x.Out.WriteBulkString(p.Key)
		WriteValue(x, p.Val)
	}
}

// WriteValue writes one value of a map or array reply.
func WriteValue(x *Session, v any) {
	switch v := v.(type) {
	case nil:
		x.Null()
	case string:
		x.Out.WriteBulkString(v)
	case []byte:
		x.Out.WriteBulk(v)
	case int:
		x.Out.WriteInt(v)
	case int64:
		x.Out.WriteInt64(v)
	case []Pair:
		WriteMap(x, v)
	case FlagSet:
		x.WriteSetLen(len(v))
		for _, f := range v {
			x.Out.WriteString(f)
		}
	case Set:
		x.WriteSetLen(len(v))
		for _, e := range v {
			WriteValue(x, e)
		}
	default:
		writeList(x, v)
	}
}

// writeList writes the array values of WriteValue.
func writeList(x *Session, v any) {
	switch v := v.(type) {
	case []string:
		x.Out.WriteArray(len(v))
		for _, s := range v {
			x.Out.WriteBulkString(s)
		}
	case []any:
		x.Out.WriteArray(len(v))
		for _, e := range v {
			WriteValue(x, e)
		}
	default:
		panic(fmt.Sprintf("server: no reply for a %T", v)) // a programmer error, recovered per command
	}
}
