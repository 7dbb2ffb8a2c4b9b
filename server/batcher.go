package server

import "github.com/rlstore/rlstore/server/internal/resp"

// batcher runs a connection's batches for resp.RawReader.Stay, which reads them
// without leaving its wait for the socket between one batch and the next.
type batcher struct {
	s    *Server
	c    *client
	rc   *resp.Conn
	done bool  // the connection ends
	err  error // why, if done; nil: it closed cleanly
}

// run runs the batch the buffer holds.
func (b *batcher) run() { b.done, b.err = b.s.batch(b.c, b.rc) }

// Room is where the next read goes.
func (b *batcher) Room() []byte {
	return b.rc.Room()
}

// Got runs what a read of n bytes into Room brought in, and reports
// whether the connection goes on.
func (b *batcher) Got(n int) bool {
	b.rc.Filled(n)
	b.run()
	return !b.done
}

// Next reports whether Stay may go on reading: not while the server
// drains and the connection stands between requests, which loop's read
// handles (see resp.Guard), even for a client whose requests always
// fill the buffer.
func (b *batcher) Next() bool { return !b.rc.Guard().PrepareRead(b.rc.Idle()) }
