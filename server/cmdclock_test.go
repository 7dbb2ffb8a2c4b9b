package server

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A command's wall time is the wall clock's, however its start was marked:
// by the read of its batch, by the command before it, or not at all.
func TestCommandNowIsWallTime(t *testing.T) {
	s := newTestServer(t, Config{})
	for _, mark := range []func(c *client){
		func(c *client) { c.Mark = s.monotonic() },   // the batch's read (Server.readAt)
		func(c *client) { c.Mark = s.batchStart(c) }, // nothing marked it
		func(c *client) { c.Mark = 0 },               // not inside a batch
	} {
		c := &client{}
		for range 3 {
			before := time.Now().UnixNano()
			mark(c)
			now := s.commandNow(c)
			after := time.Now().UnixNano()
			assert.GreaterOrEqual(t, now, before)
			assert.LessOrEqual(t, now, after)
		}
	}
}
