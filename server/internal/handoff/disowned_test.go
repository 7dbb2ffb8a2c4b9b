package handoff

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// TestDisownedKeptBehindTheBackup: x hands a slot it served (backup p) to
// o, and learns, before its lease lets the handoff go, that it was
// declared dead; its rejoin disowns the handoff and keeps the keys for o.
// When the members that reported the death are a quorum of the known
// ones, a majority may have confirmed it and p taken the slot over since:
// the keys go to o without a DONE, and x answers o's RELEASED "ASK p"
// (disownedBy). The simulation's cold seed 1535 at a 1 s import wait: n4's
// kept 97 of slot 5654 ended n0's import with their DONE while n1, which
// had taken the slot over at n4's confirmed death, kept 102. Before, the
// DONE went either way. A death that only a minority reported moved no
// slot: the DONE goes, as before.
func TestDisownedKeptBehindTheBackup(t *testing.T) {
	alone := viewOf(t, 1, []string{"x"})
	xp := viewOf(t, 2, []string{"x", "p"})
	xop := viewOf(t, 3, []string{"x", "o", "p"})
	var key []byte
	for i := 0; key == nil; i++ {
		k := []byte("disowned" + strconv.Itoa(i))
		if xop.Table.Owner(cluster.Slot(k)).Name == "o" {
			key = k
		}
	}
	slot := cluster.Slot(key)
	known := []string{"x", "o", "p"}
	for _, tc := range []struct {
		reporters []string
		behind    bool
	}{
		{[]string{"o", "p"}, true},
		{[]string{"p"}, false},
	} {
		lease := cluster.NewLease("x", time.Hour)
		l := lease.Now()
		for _, m := range []string{"o", "p"} {
			lease.AnsweredAt(l, m, l, false, 0, known) // heard, never declaring x dead
		}
		var cur atomic.Pointer[cluster.View]
		cur.Store(alone) // x served the slot alone, then p joined (its backup), then o (its owner)
		n := nodeWith(t, &cur, func(c *Config) {
			c.Lease = lease
			c.Known = func() []string { return known }
		})
		fw := n.cfg.Forwarder.(*recorder)
		holdKey(t, n, key, 97, time.Now())
		cur.Store(xp)
		n.View()
		cur.Store(xop)
		n.View()
		st := n.ho.state(slot)
		require.True(t, st != nil && st.mg != nil, "x hands the slot to o once it holds its lease")

		l = lease.Now()
		for _, m := range tc.reporters {
			lease.AnsweredAt(l, m, l, false, 1, known) // x was declared dead: its rejoin disowns the handoff
		}
		require.Eventually(t, func() bool { return n.keeps(slot) }, 5*time.Second, time.Millisecond, "x keeps the keys for o")
		l = lease.Now()
		lease.SentAt(l, known)
		lease.AnsweredAt(l, "p", l, true, 1, known)
		require.True(t, n.serving(), "x holds its lease")
		require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() }, 5*time.Second, time.Millisecond, "the kept keys go to o")

		if !tc.behind {
			assert.True(t, doneHas(fw.commands(), slot), "reported by %v, a minority: the DONE goes", tc.reporters)
			continue
		}
		assert.True(t, slices.ContainsFunc(fw.commands(), func(c string) bool { return strings.HasPrefix(c, cluster.PeerImport+" ") }), "the keys go")
		assert.False(t, doneHas(fw.commands(), slot), "reported by %v, a quorum: p may have served the slot since", tc.reporters)
		assert.Equal(t, "+"+releaseNone+" "+cluster.ReleasedAsk+" p "+strconv.Itoa(slot), releasedTo(n, "o", slot), "ASK p")
	}
}

// doneHas reports whether one of cmds (a recorder's) is a DONE for slot.
func doneHas(cmds []string, slot int) bool {
	for _, c := range cmds {
		list, ok := strings.CutPrefix(c, cluster.PeerDone+" ")
		if slots, parsed := parseSlots(list); ok && parsed && slices.Contains(slots, slot) {
			return true
		}
	}
	return false
}
