// Package resp is the RESP transport beneath the server: the listener, the
// connection's requests (reading, raw socket I/O, parsed with
// internal/wire's Parser) and replies (batching, Laters, pushed frames, the
// budget of all clients' replies); it knows no command.
package resp
