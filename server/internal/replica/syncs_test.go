package replica

import (
	"context"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
)

// syncBackup answers every RL.PEER SYNC with its reply and records each
// one's argument count.
type syncBackup struct {
	reply string
	sent  []int
}

func (b *syncBackup) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	reps := make([][]byte, len(cmds))
	for i, args := range cmds {
		b.sent = append(b.sent, len(args))
		reps[i] = []byte(b.reply)
	}
	return reps, nil
}

func (b *syncBackup) Send(string, uint64, []byte, int, cluster.Replier) {
	panic("not used by sendSync")
}

// TestSendSyncRetriesOnlyAnOldNode: a full sync's RL.PEER SYNC carries the
// backed bitmap; only cluster.PeerRefused, what a node from before it
// answers the longer form, gets the drop bitmap alone. A backup that
// keeps no replicas, or any other NOPERM, is not asked again in the old
// form: before, any reply starting with NOPERM was.
func TestSendSyncRetriesOnlyAnOldNode(t *testing.T) {
	drop, backed := make([]byte, cluster.Slots/8), make([]byte, cluster.Slots/8)
	for _, tc := range []struct {
		reply string
		want  []int // the argument counts of the SYNCs sent
	}{
		{"+OK\r\n", []int{4}},
		{"-" + cluster.PeerRefused + "\r\n", []int{4, 3}},
		{"-" + cluster.PeerNoReplicas + "\r\n", []int{4}},
		{"-NOPERM this command is for cluster peers only\r\n", []int{4}},
		{"-NOPERM bad cluster credentials, and more\r\n", []int{4}},
	} {
		b := &syncBackup{reply: tc.reply}
		p := &shipPeer{r: &Replicator{cfg: Config{Ship: b}}}
		err := p.sendSync(cluster.Node{Name: "b", Addr: "127.0.0.1:1"}, drop, backed)
		assert.Equal(t, tc.want, b.sent, "SYNCs sent on %q", tc.reply)
		if tc.reply[0] == '-' {
			assert.Error(t, err, tc.reply)
		} else {
			assert.NoError(t, err, tc.reply)
		}
	}
}
