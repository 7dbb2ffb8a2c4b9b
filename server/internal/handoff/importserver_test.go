package handoff

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestImportServer: x held p's copies of a slot (p served it) when its
// table moved the slot from p to o; a later table gives x the slot, with o
// its old owner. o may be a table of a moment's owner that never held it
// (the simulation's cold seed 2426: its DONE ended the import, and x
// served the slot from 0 while p, paused, held its keys), so x imports
// the slot from p, which served it. Without p's copies (p may never have
// held it: askChain's guess) x imports from o as before, and p gone from
// the table is not named.
func TestImportServer(t *testing.T) {
	// x is n1, p n2, o n3: the tables of cold seed 2426.
	xp := viewOf(t, 1, []string{"n1", "n2", "n4"})
	xpo := viewOf(t, 2, []string{"n1", "n2", "n3", "n4"})
	xpoq := viewOf(t, 3, []string{"n1", "n0", "n2", "n3", "n4"})
	var slots []int
	for slot := range cluster.Slots {
		if xp.Table.Owner(slot).Name == "n2" && xpo.Table.Owner(slot).Name == "n3" && xpoq.Table.Owner(slot).Name == "n1" {
			slots = append(slots, slot)
		}
	}
	require.GreaterOrEqual(t, len(slots), 2, "slots n2 owns, then n3, then n1")
	served, unheld := slots[0], slots[1]
	held := func(slot int, owner string) bool { return owner == "n2" && slot == served }
	noInc := func(string) uint64 { return 0 }

	var cur atomic.Pointer[cluster.View]
	cur.Store(viewOf(t, 1, []string{"n1"}))
	n := buildNode(t, &cur, &recorder{}, nil, false)
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	h := &n.ho
	h.noteDeadPrev(nil, xp, noInc, held)
	h.noteDeadPrev(xp, xpo, noInc, held)
	require.Equal(t, "n2", h.deadPrev[served], "thirdPrev: moved from n2 to n3")
	h.served = h.servedBy()
	h.noteDeadPrev(xpo, xpoq, noInc, held)
	until := time.Now().Add(importWait)

	st := n.importFrom(xpo, xpoq, served, true, until)
	require.NotNil(t, st)
	assert.Equal(t, "n2", st.peer.Name, "from n2, which served it, not n3")
	assert.False(t, st.guess)
	st = n.importFrom(xpo, xpoq, unheld, true, until)
	require.NotNil(t, st)
	assert.Equal(t, "n3", st.peer.Name, "no copies of n2's: from the table's old owner, as before")
	assert.Empty(t, h.importServer(viewOf(t, 3, []string{"n1", "n0", "n3", "n4"}), "n3", served), "n2 gone from the table: not named")
}
