// Package resp is the RESP transport beneath the server: the listener, the
// connection's requests (framing, parsing, raw socket I/O) and replies
// (batching, Laters, pushed frames, the budget of all clients' replies); it
// knows no command.
package resp
