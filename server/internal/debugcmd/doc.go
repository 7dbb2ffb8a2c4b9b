// Package debugcmd is DEBUG, which exists only when the server's
// EnableDebugCommand allows it, and the settable clock it drives: DEBUG
// SET-CLOCK lets a test that replays recorded traffic decide every request
// at the instant it was recorded at, so replies with times in them come
// out the same byte for byte. Anyone who may run it can reset every key's
// window, which is why it is off by default and, with "local", loopback
// only, as redis.conf's enable-debug-command.
package debugcmd
