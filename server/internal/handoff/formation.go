package handoff

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/shard"
)

// logChange logs, at debug, what a table change left: the table's
// members, whether this node counts its previous table, and the slots it
// imports by old owner (a guess or not) and migrates by new owner. The
// caller holds switchMu.
func (n *Node) logChange(nv *cluster.View, outs map[string][]int) {
	if !n.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	h := &n.ho
	var members []string
	for _, m := range nv.Table.Nodes() {
		members = append(members, m.Name)
	}
	in := map[string]int{}
	for slot := range cluster.Slots {
		if st := h.state(slot); st != nil && st.mode == ModeImporting {
			k := st.peer.Name
			if st.guess {
				k += "(guess)"
			}
			if st.keep {
				k += "(keep)"
			}
			in[k]++
		}
	}
	out := map[string]int{}
	for to, slots := range outs {
		out[to] = len(slots)
	}
	n.log.Debug("cluster: table change", "epoch", nv.Table.Epoch(), "members", members, "counts", h.counts,
		"importing", in, "migrating", out)
}

// An import's slots are served by its old owner until its DONE, which
// serves them while it copies them out (a live handoff). Some imports
// have no such owner: a joiner's guess at a slot's backup, a restart's
// or a rejoin's import from a backup whose table names this node the
// owner, or an old owner that never held the slot (a table of a moment
// at a cold start). That node answers the requests this node
// sends it HANDEDOFF, and after its gate waits this node answers
// TRYAGAIN, while the nodes that forward to it time out and answer
// -CLUSTERDOWN. CLUSTER INFO's cluster_slots_fail counts such slots
// (ImportDown), as it counts the slots it may not serve itself.
//
// An import from a guess is such an import from its start: the guess is
// the slot's runner-up, whose table names this node the owner (a
// restart's, or a joiner's first table with others), so it serves none of
// the slot, and its PULL answer ends the import, or the import waits. The
// rarer cold-start wait (a PULL that reached its guess before the guess
// held its lease) sent no request the guess refused, so until its import
// wait ended every node said cluster_slots_fail:0 (CI at 844c1a4) while
// clients got TRYAGAIN and -CLUSTERDOWN. A guess whose own table of a
// moment still names itself the owner can serve the slot for that moment:
// counted down all the same, until the table that made the import
// changes.

// ImportDown reports whether slot is one this node imports whose
// requests no node serves, as far as it knows: an import from a guess,
// or one whose old owner answered a request for the import's slots
// HANDEDOFF, or that has waited its import wait and asks RL.PEER
// RELEASED, or that an ASK sent on.
func (n *Node) ImportDown(slot int) bool {
	st := n.ho.state(slot)
	return st != nil && st.mode == ModeImporting && (st.guess || st.waited || len(st.past) > 0 || st.refused.Load())
}

// ImportRefused notes that st's old owner answered HANDEDOFF to a request
// for one of its slots that this node sent it while importing in st.
func (n *Node) ImportRefused(st *SlotState) {
	if st != nil && st.mode == ModeImporting {
		st.refused.Store(true)
	}
}

// relayGuess: nodes started 50 to 100 ms apart (the README's three
// commands from a shell, a supervisor) form through tables of a moment.
// b's first table is {a, b}, and b imports its slots from its guess a
// (restore.go), whose PULL answer needs a's lease, which a gets within a
// term of that table; before it does, c's join gives b {a, b, c}, which
// moves some of those slots on to c. b never learned whether a held them,
// so it names a (livePrev) and sends c no DONE for them, and c waited the
// whole import wait (5 s), asked b RL.PEER RELEASED, was told to ASK a,
// and a released them a second later: about one start in five served
// those slots 6 to 7 s after the first start, with every node's clients
// getting -CLUSTERDOWN or TRYAGAIN for them meanwhile.
//
// So b asks a itself, at once, the question c would ask it: RL.PEER
// RELEASED on c's behalf (c's name, PAST b, as c asks after b's ASK), a
// few times while a has no lease yet. A node that released the slots to
// c holds none of their state (releasedLocked), so b's mark is answered:
// b drops it and answers for the slots as c's backup, as its PULL's
// answer would have (backedUpFor: copies of c's it holds, then DONE), and
// c serves them. A node that says anything else leaves the mark, and c's
// import waits as before. Only a process in a healthy cluster asks: one
// that has seen no member's death (died), was never declared dead itself
// (rejoins), and has had every known member in a table (neverSawLocked),
// as at a cold start; a restart or a rejoin amid deaths and pauses, which
// the mark was made for (the simulation's seed 4934), waits as before. Nothing here serves a slot on a timer: the
// answer is the one c would get, only sooner, and the DONE is the one a
// PULL gets. TestColdStartStaggered measured the wait; TestRelayGuess
// replays it.

// relays are the slots whose deadPrev names a guess that this node
// imported them from when its table moved them on (livePrev), to ask that
// guess about on their new owner's behalf. Guarded by Node.switchMu.
type relays struct {
	marked  replica.SlotBits    // deadPrev set by such a move, not since changed
	pending map[[2]string][]int // guess and new owner → slots, to ask once the hook ends
}

// note records that slot's deadPrev names guess, which this node imported
// slot from before its table gave slot to owner.
func (r *relays) note(slot int, guess, owner string) {
	r.marked[slot/64] |= 1 << (slot % 64)
	if r.pending == nil {
		r.pending = map[[2]string][]int{}
	}
	k := [2]string{guess, owner}
	r.pending[k] = append(r.pending[k], slot)
}

// relayGuesses starts asking, for the slots the table change to nv moved
// on from an import from a guess, that guess (see relayGuess). The caller
// holds switchMu.
func (n *Node) relayGuesses(nv *cluster.View) {
	pending := n.ho.relay.pending
	n.ho.relay.pending = nil
	if len(n.ho.died) > 0 || n.rejoins.Load() > 0 || n.neverSawLocked() {
		return // not a cold start: see relayGuess
	}
	for k, slots := range pending {
		guess, ok := nv.Table.Node(k[0])
		if !ok || !nv.Table.Has(k[1]) {
			continue
		}
		go n.relayGuess(nv.Self, guess, k[1], slots)
	}
}

// relayTries and relayRetry bound relayGuess's questions: the guess
// answers nothing until it holds its lease, within a term of its first
// table with another member.
const (
	relayTries = 15
	relayRetry = 100 * time.Millisecond
)

// relayGuess asks guess which of slots it released to owner, and answers
// owner's PULL for those, as its backup (see relayGuess above).
func (n *Node) relayGuess(self string, guess cluster.Node, owner string, slots []int) {
	for try := 0; try < relayTries && len(slots) > 0; try++ {
		if try > 0 {
			time.Sleep(relayRetry)
		}
		released, err := n.releasedTo(guess, owner, slots, self)
		if err != nil && strings.HasPrefix(err.Error(), errPeerAuth[:6]) {
			return // a node that predates PAST: owner asks it itself, after its import wait
		}
		if err != nil || len(released) == 0 {
			continue
		}
		n.switchMu.Lock()
		var answered []int
		v := n.cur.Load()
		for _, slot := range released {
			if n.ho.relay.marked.Has(slot) && n.ho.deadPrev[slot] == guess.Name && v.Table.Owner(slot).Name == owner {
				n.ho.deadPrev[slot] = "" // guess holds none of it: see relayGuess
				n.ho.relay.marked[slot/64] &^= 1 << (slot % 64)
				answered = append(answered, slot)
			}
		}
		n.switchMu.Unlock()
		slots = slices.DeleteFunc(slots, func(slot int) bool { return slices.Contains(released, slot) })
		if len(answered) == 0 {
			continue
		}
		to, backed := n.backedUpFor(owner, answered)
		n.log.Info("cluster: a guess that slots were imported from released them to their new owner; answering for them as its backup",
			"guess", guess.Name, "owner", owner, "released", len(answered), "backed", len(backed))
		if len(backed) > 0 {
			var copies *shard.Map
			if n.repl != nil {
				copies = n.repl.Copies()
			}
			n.sendCopies(copies, to, backed)
		}
	}
}

// releasedTo asks node to which of slots it has released to owner, in
// the form owner asks once self's ASK sent its import to it (PAST self).
// A node that predates PAST answers an error: nothing is released.
func (n *Node) releasedTo(to cluster.Node, owner string, slots []int, self string) ([]int, error) {
	fw := n.cfg.Mover
	if fw == nil {
		fw = n.cfg.Forwarder
	}
	req := [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerReleased), []byte(owner), []byte(formatSlots(slots)),
		[]byte(cluster.ReleasedPast), []byte(self)}
	reps, err := fw.Forward(context.Background(), to.Addr, [][][]byte{req})
	if err != nil {
		return nil, err
	}
	rep := strings.TrimSpace(string(reps[0]))
	if strings.HasPrefix(rep, "-") {
		return nil, errors.New(rep[1:])
	}
	out, _, ok := parseReleased(strings.TrimPrefix(rep, "+"))
	if !ok {
		return nil, errors.New("bad RL.PEER RELEASED answer: " + rep)
	}
	return out, nil
}
