package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A command's wall time is the wall clock's, however its start was marked:
// by the read of its batch, by the command before it, or not at all.
//
// A time from a mark is the session's wall base plus the mark, and the base
// is one time.Now, which reads the wall clock and then the monotonic clock:
// the base is behind by the time between the two reads, 20–30 ns here (the
// test's reads allowed none, and failed 2 runs in 300), or by as long as the
// thread waited if it was preempted there (milliseconds on a loaded host).
// So every read is within a second of the test's own reads, and in at least
// one of five sessions every read lies between them, give or take a
// microsecond: a base that is not the wall clock's is off in all five.
func TestCommandNowIsWallTime(t *testing.T) {
	const slack = int64(time.Microsecond)
	s := newTestServer(t, Config{})
	for i, mark := range []func(c *client){
		func(c *client) { c.Mark = s.monotonic() },   // the batch's read (Server.readAt)
		func(c *client) { c.Mark = s.batchStart(c) }, // nothing marked it
		func(c *client) { c.Mark = 0 },               // not inside a batch
	} {
		exact := 0
		for range 5 {
			c, within := &client{}, true
			for range 3 { // the first read sets the session's base, the others use it
				before := time.Now().UnixNano()
				mark(c)
				now := s.commandNow(c)
				after := time.Now().UnixNano()
				assert.GreaterOrEqual(t, now, before-int64(time.Second))
				assert.LessOrEqual(t, now, after+int64(time.Second))
				within = within && before-slack <= now && now <= after+slack
			}
			if within {
				exact++
			}
		}
		assert.Positive(t, exact, "mark %d: in no session does every read lie between the test's own", i)
	}
}
