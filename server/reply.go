package server

import (
	"fmt"
	"strconv"
)

// The connection's writers write RESP2. These helpers write the RESP3 frames rlstore
// needs with WriteRaw when the client has said HELLO 3, and the RESP2 shape
// that clients of that version expect otherwise.

// pair is one key and value of a map reply. val is a string, []byte, int,
// int64, nil, []string, []any, flagSet, respSet or a nested []pair.
type pair struct {
	key string
	val any
}

// writeMap writes pairs as a map: a RESP3 map for a RESP3 client, else the
// flat array of keys and values that RESP2 clients read maps from.
// HELLO, CONFIG GET, COMMAND DOCS and RL.INFO reply with it.
func writeMap(c *client, pairs []pair) {
	writeMapLen(c, len(pairs))
	for _, p := range pairs {
		c.conn.WriteBulkString(p.key)
		writeValue(c, p.val)
	}
}

// writeMapLen writes the header of a map of n pairs; the caller then writes
// 2n values, key first. It is writeMap for callers that avoid building pairs.
func writeMapLen(c *client, n int) {
	if c.Proto == 3 {
		writeHeader(c, '%', n)
		return
	}
	c.conn.WriteArray(2 * n)
}

// flagSet is a set of status replies, the form of every list of flags
// Redis sends: command flags, ACL categories, argument and key spec flags.
// redis-cli 7 asserts the status type and aborts on a bulk string.
type flagSet []string

// respSet is a set of values: a RESP3 set, an array in RESP2.
type respSet []any

// writeSetLen writes the header of a set of n elements: a RESP3 set for a
// RESP3 client, else an array.
func writeSetLen(c *client, n int) {
	if c.Proto == 3 {
		writeHeader(c, '~', n)
		return
	}
	c.conn.WriteArray(n)
}

// writeNull writes the null reply: RESP3's own null, or RESP2's null bulk string.
func writeNull(c *client) {
	if c.Proto == 3 {
		c.conn.WriteRaw([]byte("_\r\n"))
		return
	}
	c.conn.WriteNull()
}

// writeHeader writes a RESP header such as "%3\r\n" without allocating.
func writeHeader(c *client, kind byte, n int) {
	var b [24]byte
	h := strconv.AppendInt(append(b[:0], kind), int64(n), 10)
	c.conn.WriteRaw(append(h, '\r', '\n'))
}

// writeValue writes one value of a map or array reply.
func writeValue(c *client, v any) {
	switch v := v.(type) {
	case nil:
		writeNull(c)
	case string:
		c.conn.WriteBulkString(v)
	case []byte:
		c.conn.WriteBulk(v)
	case int:
		c.conn.WriteInt(v)
	case int64:
		c.conn.WriteInt64(v)
	case []pair:
		writeMap(c, v)
	case flagSet:
		writeSetLen(c, len(v))
		for _, f := range v {
			c.conn.WriteString(f)
		}
	case respSet:
		writeSetLen(c, len(v))
		for _, e := range v {
			writeValue(c, e)
		}
	default:
		writeList(c, v)
	}
}

// writeList writes the array values of writeValue.
func writeList(c *client, v any) {
	switch v := v.(type) {
	case []string:
		c.conn.WriteArray(len(v))
		for _, s := range v {
			c.conn.WriteBulkString(s)
		}
	case []any:
		c.conn.WriteArray(len(v))
		for _, e := range v {
			writeValue(c, e)
		}
	default:
		panic(fmt.Sprintf("server: no reply for a %T", v)) // a programmer error, recovered per command
	}
}
