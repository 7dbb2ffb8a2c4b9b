package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/replica"
)

// An import ends on its old owner's DONE, its leaving or death, or its
// word that it released the slot (release.go), never on a timer. Some
// imports wait on while every member is alive: their old owner answers
// RL.PEER RELEASED with NONE for as long as it does not know who holds the
// slot's state (a member this process never saw, a slot handed to a
// member's old process), and RL.CLUSTER FORGET helps only with a member
// gone for good. So this node shows how many of its slots have waited
// longer than importWait, and whom for (RL.CLUSTER INFO, and a log line
// at most every stuckLogEvery), and an operator may end one such wait:
// RL.CLUSTER SETSLOT slot STABLE, as Redis's CLUSTER SETSLOT STABLE
// clears a slot's importing state. The node then serves the slot from
// the keys it holds, which may lack what the old owner decided: a loss
// the operator chose, logged and counted.
//
// The end makes no second server where the wait had none. This node must
// own the slot by its table and hold its lease, as for any slot it
// serves. And the old owner must not serve the slot, nor be about to:
//   - It must not be handing the slot over: it serves a slot until its
//     cut, and answers RELEASED with NONE meanwhile, which is what keeps
//     such an import waiting. So the import must have waited StableAfter
//     (migrateWait: a handoff whose copies or DONE fail is retried that
//     long, then abandoned, and the slot's keys kept for this node), and
//     no copy of the slot's keys may be arriving from the old owner (an
//     RL.PEER IMPORT from it within importWait: a large slot's copy may
//     take longer).
//   - Its own table must not name it the slot's owner (tables differ for
//     a moment, or longer across a cut): asked RL.PEER SERVES, it answers
//     which of the slots it serves, or would by its table once it holds
//     its lease (peerServes). A slot it serves, or an old owner that does
//     not answer, leaves the wait as it is; one that predates the
//     question is taken at its RELEASED's word, as before it.
// A handoff that comes later finds the slot served here and only adds the
// keys this node lacks (servedSlots), as after a membership flap; a
// handback in mode replace, from a node that saw this node's death
// confirmed and served the slot since, replaces them, as it would have
// ended the wait.

// Bounds of the stuck imports' log line.
const (
	stuckLogEvery = 10 * time.Second
	stuckShown    = 5 // slot numbers the line names
)

// EndImport's and EndStuckImports' refusals; the router words the replies.
var (
	ErrNotOwner = errors.New("handoff: this node does not own the slot")
	ErrNoLease  = errors.New("handoff: this node does not hold its lease")
)

// WaitError is EndImport's refusal of a wait that may yet end by itself,
// or whose end could make a second server: Why says which.
type WaitError struct {
	Slot   int
	Peer   string        // the old owner the import waits on
	Waited time.Duration // so far
	Why    WaitReason
}

// WaitReason is why EndImport leaves a wait as it is.
type WaitReason int

const (
	WaitYoung    WaitReason = iota + 1 // it has waited less than StableAfter
	WaitCopying                        // Peer sent an RL.PEER IMPORT within the import wait
	WaitServed                         // Peer serves the slot, or would by its table
	WaitNoAnswer                       // Peer did not answer RL.PEER SERVES
	WaitMoved                          // the import kept moving to other old owners while asked
)

// StableAfter is how long an import must have waited before an operator
// may end it: as long as an old owner retries a handoff that fails.
const StableAfter = migrateWait

func (e *WaitError) Error() string {
	why := [...]string{"", "has waited less than " + StableAfter.String(), "is being copied", "is served there",
		"is not answered for", "moves on"}[e.Why]
	return fmt.Sprintf("handoff: slot %d, waiting %d ms for %s, %s", e.Slot, e.Waited.Milliseconds(), e.Peer, why)
}

// waits is when each slot's import began, and the operator's ends of
// imports. New sets origin; with none (a bare handoff in a test) every
// reading is the same, so no import counts as waiting.
type waits struct {
	origin time.Time                   // the monotonic clock's origin; set by New
	since  [cluster.Slots]atomic.Int64 // per slot: when its import began, ns since origin; read only while it imports
	logged atomic.Int64                // when the stuck imports were last logged, ns since origin (0: never)
	ended  atomic.Int64                // imports an operator ended

	copyMu sync.Mutex       // guards copyAt
	copyAt map[string]int64 // when each node's last RL.PEER IMPORT came, ns since origin
}

// now is the time since origin, at least 1 ns.
func (w *waits) now() int64 { return max(1, int64(time.Since(w.origin))) }

// note records the start of slot's import when its state goes from old
// to st: set and swap call it. A state that moves from one import to
// another (a re-pointed or re-asked import) goes on waiting.
func (w *waits) note(slot int, old, st *SlotState) {
	if st != nil && st.mode == ModeImporting && (old == nil || old.mode != ModeImporting) {
		w.since[slot].Store(w.now())
	}
}

// copied records that node from sent an RL.PEER IMPORT now.
func (w *waits) copied(from string) {
	w.copyMu.Lock()
	defer w.copyMu.Unlock()
	if w.copyAt == nil {
		w.copyAt = map[string]int64{}
	}
	w.copyAt[from] = w.now()
}

// copying reports whether node from sent an RL.PEER IMPORT within
// importWait: a copy from it is under way.
func (w *waits) copying(from string, now int64) bool {
	w.copyMu.Lock()
	defer w.copyMu.Unlock()
	at, ok := w.copyAt[from]
	return ok && time.Duration(now-at) < importWait
}

// waited returns how long slot's import has waited; slot imports.
func (w *waits) waited(slot int, now int64) time.Duration {
	return time.Duration(max(0, now-w.since[slot].Load()))
}

// stuckImports are the imports that have waited longer than importWait.
type stuckImports struct {
	slots   int
	first   []int         // the first stuckShown of them
	on      []string      // the nodes they wait on (asked RL.PEER RELEASED), sorted
	longest time.Duration // the longest wait of any import
}

// stuck scans the imports.
func (h *handoff) stuck() stuckImports {
	var s stuckImports
	now := h.waits.now()
	for slot := range h.slots {
		st := h.slots[slot].Load()
		if st == nil || st.mode != ModeImporting {
			continue
		}
		d := h.waits.waited(slot, now)
		s.longest = max(s.longest, d)
		if d <= importWait {
			continue
		}
		s.slots++
		if len(s.first) < stuckShown {
			s.first = append(s.first, slot)
		}
		if !slices.Contains(s.on, st.peer.Name) {
			s.on = append(s.on, st.peer.Name)
		}
	}
	slices.Sort(s.on)
	return s
}

// stuckPairs are RL.CLUSTER INFO's fields about the imports' waits.
func (h *handoff) stuckPairs() []core.Pair {
	s := h.stuck()
	return []core.Pair{
		{Key: "handoff_import_slots_stuck", Val: s.slots},
		{Key: "handoff_import_longest_wait_ms", Val: s.longest.Milliseconds()},
		{Key: "handoff_imports_ended_by_operator", Val: h.waits.ended.Load()},
	}
}

// logStuck logs the imports that have waited longer than importWait, at
// most every stuckLogEvery, once one of them has had its old owner's
// first answer (or none) to RL.PEER RELEASED: an import asked at
// importWait is often released then (nodes started at once), and is no
// news. expireImports, which asks the old owners every releaseRetry while
// any import waits, calls it.
func (n *Node) logStuck() {
	w := &n.ho.waits
	now, last := w.now(), w.logged.Load()
	if last != 0 && time.Duration(now-last) < stuckLogEvery {
		return
	}
	s := n.ho.stuck()
	if s.longest <= importWait+releaseRetry || !w.logged.CompareAndSwap(last, now) {
		return
	}
	n.log.Warn("cluster: slots wait for their import longer than the import wait; their old owners have not handed them over nor released them. "+
		"A handoff, or RL.CLUSTER FORGET of a member gone for good, ends the wait; so does RL.CLUSTER SETSLOT <slot> STABLE on this node once the slot has waited "+StableAfter.String()+", which serves it from the keys this node holds",
		"slots", s.slots, "first", s.first, "waiting_on", s.on, "longest", s.longest.Round(time.Millisecond))
}

// EndImport ends slot's import wait, an operator's RL.CLUSTER SETSLOT
// slot STABLE: this node serves the slot from the keys it holds. It
// reports whether the slot was waiting; one that was not is left as it
// is (Redis's STABLE is idempotent). It asks the old owner whether it
// serves the slot first, and refuses as the errors above say.
func (n *Node) EndImport(slot int) (bool, error) {
	for try := 0; ; try++ {
		st, d, err := n.stableCandidate(slot)
		if st == nil || err != nil {
			return false, err
		}
		served, err := n.askServes(st.peer, []int{slot})
		switch {
		case err != nil:
			return false, &WaitError{Slot: slot, Peer: st.peer.Name, Waited: d, Why: WaitNoAnswer}
		case served.Has(slot):
			return false, &WaitError{Slot: slot, Peer: st.peer.Name, Waited: d, Why: WaitServed}
		}
		n.switchMu.Lock()
		cur, d, err := n.stableLocked(slot)
		if err == nil && cur != nil && cur.peer.Name == st.peer.Name {
			n.endImportLocked(slot)
			n.switchMu.Unlock()
			n.ho.notify()
			n.log.Warn("cluster: an operator ended a slot's import wait (RL.CLUSTER SETSLOT STABLE); serving it from the keys this node holds, which may lack what its old owner decided",
				"slot", slot, "waited_on", cur.peer.Name, "asked_before", cur.past, "waited", d.Round(time.Millisecond))
			return true, nil
		}
		n.switchMu.Unlock()
		if cur == nil || err != nil {
			return false, err // ended, or refused, while the old owner was asked
		}
		if try == 2 {
			return false, &WaitError{Slot: slot, Peer: cur.peer.Name, Waited: d, Why: WaitMoved}
		}
	}
}

// stableCandidate is stableLocked for a caller that does not hold
// switchMu, with the membership's newer view taken first.
func (n *Node) stableCandidate(slot int) (*SlotState, time.Duration, error) {
	n.View()
	n.switchMu.Lock()
	defer n.switchMu.Unlock()
	return n.stableLocked(slot)
}

// stableLocked returns slot's import state if this node may end its wait,
// once its old owner says it does not serve the slot, and how long it has
// waited; nil for a slot that does not wait. The caller holds switchMu.
func (n *Node) stableLocked(slot int) (*SlotState, time.Duration, error) {
	v := n.cur.Load()
	if n.ho.heir(v, slot).Name != v.Self {
		return nil, 0, ErrNotOwner
	}
	if !n.serving() {
		return nil, 0, ErrNoLease
	}
	st := n.ho.state(slot)
	if st == nil || st.mode != ModeImporting {
		return nil, 0, nil
	}
	now := n.ho.waits.now()
	d := n.ho.waits.waited(slot, now)
	switch {
	case d <= StableAfter:
		return nil, d, &WaitError{Slot: slot, Peer: st.peer.Name, Waited: d, Why: WaitYoung}
	case n.ho.waits.copying(st.peer.Name, now):
		return nil, d, &WaitError{Slot: slot, Peer: st.peer.Name, Waited: d, Why: WaitCopying}
	}
	return st, d, nil
}

// EndStuckImports ends every import wait on this node that EndImport
// would end, RL.CLUSTER SETSLOT ALL STABLE, and returns how many it ended:
// those of slots it owns that have waited StableAfter, with no copy from
// their old owner arriving, whose old owner says it does not serve them.
// It asks each old owner once, for all its slots.
func (n *Node) EndStuckImports() (int, error) {
	n.View()
	n.switchMu.Lock()
	if !n.serving() {
		n.switchMu.Unlock()
		return 0, ErrNoLease
	}
	peers := map[string]cluster.Node{}
	bySlot := map[string][]int{}
	for slot := range cluster.Slots {
		if st, _, err := n.stableLocked(slot); st != nil && err == nil {
			peers[st.peer.Name] = st.peer
			bySlot[st.peer.Name] = append(bySlot[st.peer.Name], slot)
		}
	}
	n.switchMu.Unlock()
	var ended, left []int
	var on []string
	for name, slots := range bySlot {
		served, err := n.askServes(peers[name], slots)
		n.switchMu.Lock()
		for _, slot := range slots {
			st, _, e := n.stableLocked(slot)
			if err != nil || served.Has(slot) || e != nil || st == nil || st.peer.Name != name {
				left = append(left, slot)
				continue
			}
			n.endImportLocked(slot)
			ended = append(ended, slot)
			if !slices.Contains(on, name) {
				on = append(on, name)
			}
		}
		n.switchMu.Unlock()
	}
	if len(left) > 0 {
		slices.Sort(left)
		n.log.Warn("cluster: RL.CLUSTER SETSLOT ALL STABLE left slots waiting: their old owner serves them, or would by its table, or did not answer",
			"slots", len(left), "first", left[:min(len(left), stuckShown)])
	}
	if len(ended) == 0 {
		return 0, nil
	}
	n.ho.notify()
	slices.Sort(ended)
	slices.Sort(on)
	n.log.Warn("cluster: an operator ended every stuck import wait (RL.CLUSTER SETSLOT ALL STABLE); serving the slots from the keys this node holds, which may lack what their old owners decided",
		"slots", len(ended), "first", ended[:min(len(ended), stuckShown)], "waited_on", on)
	return len(ended), nil
}

// endImportLocked ends slot's import as an old owner's RELEASED does
// (askReleased). The caller holds switchMu.
func (n *Node) endImportLocked(slot int) {
	n.ho.set(slot, nil)
	n.ho.holdBy(slot, "") // served here from now on
	n.ho.waits.ended.Add(1)
}

// askServes asks to which of slots it serves, or would by its table
// (RL.PEER SERVES). A node that predates the question serves none, as
// far as this node can tell: its RELEASED's NONE is all there is.
func (n *Node) askServes(to cluster.Node, slots []int) (*replica.SlotBits, error) {
	fw := n.cfg.Mover
	if fw == nil {
		fw = n.cfg.Forwarder
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*releaseRetry)
	defer cancel()
	self := n.cur.Load().Self
	req := [][]byte{[]byte(cluster.PeerCommand), []byte(cluster.PeerServes), []byte(self), []byte(formatSlots(slots))}
	reps, err := fw.Forward(ctx, to.Addr, [][][]byte{req})
	if err != nil {
		return nil, err
	}
	rep := strings.TrimSpace(string(reps[0]))
	served := &replica.SlotBits{}
	switch {
	case strings.HasPrefix(rep, "-"+errPeerAuth[:6]):
		n.log.Info("cluster: an import's old owner predates RL.PEER SERVES; taking its RELEASED's word", "from", to.Name)
		return served, nil
	case strings.HasPrefix(rep, "-"):
		return nil, errors.New(rep[1:])
	case rep == "+"+releaseNone:
		return served, nil
	}
	got, ok := parseSlots(strings.TrimPrefix(rep, "+"))
	if !ok {
		return nil, errors.New("bad RL.PEER SERVES answer: " + rep)
	}
	for _, slot := range got {
		served[slot/64] |= 1 << (slot % 64)
	}
	return served, nil
}

// peerServes is RL.PEER SERVES from slots: the slots of slots that this
// node serves, or would by its table once it holds its lease: its table
// names it their owner (importing them or not, lost or in a takeover's
// wait), or it hands them over and has not cut them, or has adopted them.
// It answers their ranges, or NONE. The asker, whose operator ends its
// import of the slots (EndImport), leaves the wait as it is for those.
func (n *Node) peerServes(x *core.Session, args [][]byte) {
	slots, ok := parseSlots(string(args[3]))
	if !ok {
		x.Out.WriteError(errSyntax)
		return
	}
	v := n.View()
	var out []int
	n.switchMu.Lock()
	for _, slot := range slots {
		if n.servesLocked(v, slot) {
			out = append(out, slot)
		}
	}
	n.switchMu.Unlock()
	if len(out) == 0 {
		x.Out.WriteString(releaseNone)
		return
	}
	x.Out.WriteString(formatSlots(out))
}

// servesLocked reports whether this node serves slot by v, or would once
// it holds its lease (see peerServes). The caller holds switchMu.
func (n *Node) servesLocked(v *cluster.View, slot int) bool {
	if st := n.ho.state(slot); st != nil {
		switch st.Mode() {
		case ModeCopying, ModeGated, ModeAdopted:
			return true
		case ModeMoved:
			return false
		}
	}
	return v.Table.Owner(slot).Name == v.Self
}
