package handoff

import (
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Why a keyed command was answered as down, counted apart in RL.CLUSTER
// INFO (down_lease, down_takeover, down_lost, down_waiting, down_backup) and logged at
// most once a second each, so that an operator (and a test) can tell a
// node that lost its quorum from one waiting out a dead owner's lease, one
// whose slots' state is lost (lost.go), and one still joining.
const (
	downLease    = iota // no lease: this node cannot reach a majority
	downTakeover        // a slot gained from a dead owner, within the takeover's wait
	downLost            // a slot whose owner and backups were declared dead
	downWaiting         // the view waits for this node's join
	downBackup          // the slot's backup has not acknowledged its changes within the lease's term (replica.Fresh)
	downReasons
)

var downNames = [downReasons]string{"lease", "takeover", "lost", "waiting", "backup"}

// downs counts the keyed commands answered as down, by reason.
type downs struct {
	n      [downReasons]atomic.Int64
	logged [downReasons]atomic.Int64 // unix ns of the last log line
}

// downReason says why this node may not serve slot for c now.
func (n *Node) downReason(x *core.Session, slot int) int {
	now := n.leaseNow(x)
	switch {
	case !n.lease.ServesAt(now):
		return downLease
	case n.takeover.Load().Lost(slot):
		return downLost
	case !n.takeover.Load().Waits(slot, now) && n.repl != nil && !n.repl.Fresh(slot, now):
		return downBackup
	}
	return downTakeover
}

// noteDown counts a down reply for why, and logs it if none of its kind
// was logged within the last second.
func (n *Node) noteDown(why, slot int) {
	d := &n.down
	d.n[why].Add(1)
	now := time.Now().UnixNano()
	last := d.logged[why].Load()
	if now-last < int64(time.Second) || !d.logged[why].CompareAndSwap(last, now) {
		return
	}
	n.log.Warn("cluster: keyed commands answered as down", "reason", downNames[why], "slot", slot,
		"total", d.n[why].Load())
}

// downPairs are RL.CLUSTER INFO's counts of down replies by reason.
func (n *Node) downPairs() []core.Pair {
	ps := make([]core.Pair, downReasons)
	for i := range ps {
		ps[i] = core.Pair{Key: "down_" + downNames[i], Val: n.down.n[i].Load()}
	}
	return ps
}
