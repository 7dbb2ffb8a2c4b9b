package core

import (
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
