package handoff

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHandoffStateCounter runs random sets and swaps against a model:
// state must return what was set, and the counter that lets state skip the
// slots must count exactly the slots that have a state once no write is
// under way.
func TestHandoffStateCounter(t *testing.T) {
	var h handoff
	model := map[int]*SlotState{}
	states := []*SlotState{nil, {mode: ModeImporting}, {mode: ModeAdopted}, {mode: ModeCopying}}
	rng := rand.New(rand.NewPCG(7, 9))
	for range 20000 {
		slot, st := rng.IntN(8), states[rng.IntN(len(states))]
		if rng.IntN(2) == 0 {
			h.set(slot, st)
			model[slot] = st
		} else {
			old := states[rng.IntN(len(states))]
			if h.swap(slot, old, st) {
				require.Equal(t, old, model[slot])
				model[slot] = st
			} else {
				require.NotEqual(t, old, model[slot])
			}
		}
		n := 0
		for s := range 8 {
			require.Same(t, model[s], h.state(s))
			if model[s] != nil {
				n++
			}
		}
		require.EqualValues(t, n, h.active.Load())
	}
}
