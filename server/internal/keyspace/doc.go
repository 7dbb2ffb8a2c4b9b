// Package keyspace is Redis's key commands over the store: DEL, EXISTS, TYPE, TTL, PTTL, SCAN, KEYS, DBSIZE, FLUSHALL, the database commands and OBJECT and MEMORY USAGE.
package keyspace
