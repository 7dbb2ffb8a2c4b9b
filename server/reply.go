package server

import "strings"

// Map replies (HELLO, CONFIG GET, INFO's fields, RL.INFO, RL.CLUSTER) are
// core.Pair lists written by core.WriteMap, in RESP3 or RESP2 as the
// client said in HELLO.

// writeHelp replies to a HELP subcommand with one line per subcommand.
func writeHelp(c *client, cm command) {
	c.conn.WriteArray(len(cm.subs))
	for _, sc := range cm.subs {
		c.conn.WriteString(strings.ToUpper(sc.name) + ": " + sc.summary)
	}
}
