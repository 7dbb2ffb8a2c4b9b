package handoff

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
)

// loser is a Forwarder that answers every RL.PEER IMPORT OK and loses the
// first DONE's answer (cluster.ErrUnreachable, as a cut does); it records
// each IMPORT's mode and each DONE.
type loser struct {
	mu   sync.Mutex
	sent []string
	lost bool
}

func (f *loser) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		switch sub := string(args[1]); sub {
		case cluster.PeerImport:
			f.sent = append(f.sent, sub+" "+string(args[3]))
		case cluster.PeerDone:
			f.sent = append(f.sent, sub)
			if !f.lost {
				f.lost = true
				return nil, cluster.ErrUnreachable
			}
		}
		reps[i] = []byte("+OK\r\n")
	}
	return reps, nil
}

func (f *loser) Send(string, uint64, []byte, int, cluster.Replier) { panic("not used") }

func (f *loser) commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sent)
}

// TestKeptKeysSentOnceGoOnInPull: kept keys of mode handback whose DONE
// got no answer are sent again in mode pull, since the owner stored them
// and may have served the slot since (sentOnce). The simulation's seed
// 4181: n4's second push of slot 12336 replaced the 60 n0 had served
// since the first with n4's 49. Before, they went again in mode handback.
func TestKeptKeysSentOnceGoOnInPull(t *testing.T) {
	v := viewOf(t, 1, []string{"x", "r"})
	slot := slotWhere(t, "a slot r owns", func(slot int) bool { return v.Table.Owner(slot).Name == "r" })
	var cur atomic.Pointer[cluster.View]
	cur.Store(v)
	fw := &loser{}
	n := nodeWith(t, &cur, func(c *Config) { c.Forwarder = fw })
	r, _ := v.Table.Node("r")
	n.abandon(&Migration{to: r, slots: []int{slot}, first: "replace"}, []int{slot}, cluster.ErrUnreachable)
	require.Eventually(t, func() bool { return len(fw.commands()) == 2 && n.keeps(slot) && !n.pushing.Load() },
		5*time.Second, time.Millisecond, "the first push, its DONE's answer lost: the keys are kept")
	assert.Equal(t, []string{cluster.PeerImport + " handback", cluster.PeerDone}, fw.commands())
	assert.Equal(t, "+"+releaseNone, releasedTo(n, "r", slot), "not released while its keys are kept")

	n.pushKept()
	require.Eventually(t, func() bool { return !n.keeps(slot) && !n.pushing.Load() },
		5*time.Second, time.Millisecond, "the second push is taken")
	assert.Equal(t, cluster.PeerImport+" pull", fw.commands()[2], "r has them: they fill only the keys it lacks")
	assert.Equal(t, "+"+strconv.Itoa(slot), releasedTo(n, "r", slot))
}
