package server

// batcher runs a connection's batches for rawReader.stay, which reads them
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

// room is where the next read goes.
func (b *batcher) room() []byte {
	b.rc.makeRoom()
	return b.rc.buf[b.rc.w:]
}

// got runs what a read of n bytes into room brought in, and reports
// whether the connection goes on.
func (b *batcher) got(n int) bool {
	b.rc.w += n
	b.run()
	return !b.done
}

// next reports whether stay may go on reading: not while the server
// drains and the connection stands between requests, which loop's read
// handles (see guardConn.read1), even for a client whose requests always
// fill the buffer.
func (b *batcher) next() bool { return !b.rc.g.prepareRead(b.rc.idle()) }
