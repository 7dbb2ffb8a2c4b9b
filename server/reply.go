package server

import (
	"fmt"
	"strings"
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
	c.WriteMapLen(len(pairs))
	for _, p := range pairs {
		c.conn.WriteBulkString(p.key)
		writeValue(c, p.val)
	}
}

// flagSet is a set of status replies, the form of every list of flags
// Redis sends: command flags, ACL categories, argument and key spec flags.
// redis-cli 7 asserts the status type and aborts on a bulk string.
type flagSet []string

// respSet is a set of values: a RESP3 set, an array in RESP2.
type respSet []any

// writeValue writes one value of a map or array reply.
func writeValue(c *client, v any) {
	switch v := v.(type) {
	case nil:
		c.Null()
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
		c.WriteSetLen(len(v))
		for _, f := range v {
			c.conn.WriteString(f)
		}
	case respSet:
		c.WriteSetLen(len(v))
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

// writeHelp replies to a HELP subcommand with one line per subcommand.
func writeHelp(c *client, cm command) {
	c.conn.WriteArray(len(cm.subs))
	for _, sc := range cm.subs {
		c.conn.WriteString(strings.ToUpper(sc.name) + ": " + sc.summary)
	}
}
