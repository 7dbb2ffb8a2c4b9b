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
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: 6500 * time.Millisecond},
			"ERR slot 42 has waited 6500 ms for n1: its handoff may be under way until it has waited 10000 ms"},
		{&handoff.WaitError{Slot: 42, Peer: "n1", Waited: time.Minute, Copying: true},
			"ERR slot 42 is being handed over by n1 now: its DONE ends the wait"},
	} {
		assert.Equal(t, tt.want, setSlotError(tt.err, 42), "%v", tt.err)
	}
}
