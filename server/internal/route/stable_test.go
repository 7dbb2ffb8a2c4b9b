package route

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/server/internal/handoff"
)

// TestSetSlotErrorWordings: each refusal of RL.CLUSTER SETSLOT STABLE is
// worded for the operator: Redis's words where Redis has them, and for a
// wait that may end by itself, why and until when.
func TestSetSlotErrorWordings(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{handoff.ErrNotOwner, "ERR I'm not the owner of hash slot 42"},
		{fmt.Errorf("ending: %w", handoff.ErrNoLease), "CLUSTERDOWN The cluster is down"},
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: 6500 * time.Millisecond, Why: handoff.WaitYoung},
			"ERR slot 42 has waited 6500 ms for n1: its handoff may be under way until it has waited 10000 ms"},
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: time.Minute, Why: handoff.WaitCopying},
			"ERR slot 42 is being handed over by n1 now: its DONE ends the wait"},
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: time.Minute, Why: handoff.WaitServed},
			"ERR slot 42 is still served by n1, whose table names it the owner: its handoff ends the wait"},
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: time.Minute, Why: handoff.WaitNoAnswer},
			"ERR slot 42 waits on n1, which does not answer: it may still serve the slot"},
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: time.Minute, Why: handoff.WaitMoved},
			"ERR slot 42 moved on to another old owner while n1 was asked: try again"},
	} {
		assert.Equal(t, tt.want, setSlotError(tt.err, 42), "%v", tt.err)
	}
}
