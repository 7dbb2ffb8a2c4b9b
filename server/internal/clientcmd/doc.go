// Package clientcmd is CLIENT's own subcommands (ID, SETNAME, GETNAME,
// SETINFO, INFO, LIST, KILL, HELP) and what they show of each connection:
// its line of CLIENT INFO and CLIENT LIST, in Redis 7's fields and order.
package clientcmd
