package server

// batcher runs a connection's batches for resp.RawReader.Stay, which reads them
// without leaving its wait for the socket between one batch and the next.
type batcher struct {
	s    *Server
	c    *client
	rc   *respConn
	done bool  // the connection ends
	err  error // why, if done; nil: it closed cleanly
}

// run runs the batch the buffer holds.
func (b *batcher) run() { b.done, b.err = b.s.batch(b.c, b.rc) }

// Room is where the next read goes.
func (b *batcher) Room() []byte {
	b.rc.makeRoom()
	return b.rc.buf[b.rc.w:]
}

// Got runs what a read of n bytes into Room brought in, and reports
// whether the connection goes on.
func (b *batcher) Got(n int) bool {
	b.rc.w += n
	b.run()
	return !b.done
}

// Next reports whether Stay may go on reading: not while the server
// drains and the connection stands between requests, which loop's read
// handles (see guardConn.read1), even for a client whose requests always
// fill the buffer.
func (b *batcher) Next() bool { return !b.rc.g.prepareRead(b.rc.idle()) }
