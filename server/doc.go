// Package server serves rlstore's commands to Redis clients over RESP.
//
// # Transport
//
// The transport is internal/resp: it knows no command. Each connection has
// one goroutine (serve.go) over a resp.Conn. It reads what the client has
// sent, parses each request once (internal/resp/parser.go: the size caps are checked as
// the parse goes, before anything is sized for a length), runs every whole
// request in order, appending replies to one buffer, commits the batch when
// it changed state (appendfsync always: the replies wait for the fsync), and
// writes the replies in one write. A write that waits on a client that does
// not read stops that client being read; no other connection waits for it.
//
// Commands write replies through their client's conn (WriteString,
// WriteInt, WriteArray, WriteBulk, WriteRaw, ...). The argument slices they
// are given point into the read buffer and are valid only during the call:
// copy what must outlive it.
//
// # Replies completed later, and pushed frames
//
// A command whose reply another goroutine completes (a request forwarded to
// the key's owner, say) calls s.later(c) instead of writing, hands the
// *resp.Later to that goroutine and returns. The connection goes on running the
// client's next requests; their replies are held until the Later's Finish is
// called with the reply's RESP bytes, so the client gets every reply in the
// order it sent the requests. Finish never waits for the client. Past
// resp.HoldReplies replies or resp.HoldBytes bytes held, the connection stops
// reading until they go out.
//
// A frame for a client from another goroutine (a RESP3 push: MONITOR,
// CLIENT TRACKING invalidations) goes through resp.Conn.Push (internal/resp/push.go), which
// writes it between two replies, never inside one, never ahead of a reply
// it must follow (even one waiting behind a Later), and never waits for the
// client. A batch whose replies pass Config.ClientOutputLimit disconnects
// its client.
package server
