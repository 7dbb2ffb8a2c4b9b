package route

import (
	"bytes"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/handoff"
)

// How long a request for a gated slot waits for the cut, and how often it
// may wait before it is answered TRYAGAIN. A cut takes the time to copy
// the slots' keys once more: milliseconds for thousands of keys.
const (
	gateWait     = 500 * time.Millisecond
	maxGateWaits = 4
)

// routeMoving is routeOf for a slot that is moving to or from this node.
//
//   - Importing (this node is the new owner): the old owner still serves
//     the slot, so requests go back to it as hopHandoff, whatever hop they
//     came with. One that comes as hopHandoff is answered errHandedOff,
//     whichever node sent it: served here, it was served from nothing
//     while another node still held the slot (TestRedPausedAtHeal: single
//     admissions above the limit). The old owner's own requests after its
//     cut find the slot taken here already (its DONE ends the import
//     before it cuts); one from the old owner while this node imports is
//     a relay by its table, which names this node the owner though it
//     never held the slot (it had handed it to a third node, since paused:
//     21 of 20 on chunk 789-809, 1.6 s after the heal).
//   - Copying (this node is the old owner): served here.
//   - Gated: wait for the cut, then route again.
//   - Moved: sent to the new owner as hopHandoff; one that came as
//     hopHandoff is answered errHandedOff, and its sender, the new owner
//     that sent it before it took the slot, runs it itself.
//   - Adopted: handed to this node ahead of its table: served here.
func (rt *Router) routeMoving(c *Conn, slot int, st *handoff.SlotState) route {
	switch st.Mode() {
	case handoff.ModeImporting:
		if c.hop == hopHandoff {
			return route{slot: slot, reply: errHandedOff}
		}
		return route{slot: slot, owner: st.Peer(), level: hopHandoff, importing: st}
	case handoff.ModeGated:
		return route{slot: slot, gate: st.Gate()}
	case handoff.ModeMoved:
		switch {
		case c.hop == hopHandoff:
			return route{slot: slot, reply: errHandedOff}
		case c.hop == hopClient && rt.cfg.Redirect:
			return route{slot: slot, reply: "MOVED " + strconv.Itoa(slot) + " " + st.Peer().Addr}
		}
		return route{slot: slot, owner: st.Peer(), level: hopHandoff}
	}
	return route{local: true, slot: slot} // copying, adopted
}

// forwardHandoff sends a request for a moving slot to the other node and
// waits for the reply: requests for a moving slot are few and short-lived,
// and waiting keeps the reply's retry here. A reply errHandedOff means the
// other node cut the slot after this one chose to send there: it reports
// false, and routeOne routes the request again (it now runs here, the
// slot's new owner), once; so too when the node cannot be reached (it may
// have just gone). While this node imports the slot, it first waits for
// the old owner's DONE, at most gateWait, maxGateWaits times in all: on a
// busy host DONE can take longer than one wait, and a plain client does
// not retry TRYAGAIN. After that the client gets TRYAGAIN or
// --owner-unreachable's answer.
func (rt *Router) forwardHandoff(x *core.Session, cm *core.Command, args [][]byte, r route, last bool) bool {
	reps, err := rt.forward(r.owner, [][][]byte{hopLevelArgs(x, args, hopHandoff)})
	if err == nil && isHandedOff(reps[0]) {
		rt.ho.ImportRefused(r.importing) // it does not serve the slot either: see handoff.ImportDown
	}
	switch {
	case err == nil && !isHandedOff(reps[0]):
		x.Out.WriteRaw(reps[0])
	case !last:
		if err == nil {
			rt.ho.CrossedCut()
		}
		return false
	case err != nil:
		rt.unreachable(x, cm, args, r.owner, err)
	default:
		x.Out.WriteError(errTryAgain)
	}
	return true
}

var handedOffPrefix = []byte("-" + errHandedOff[:9])

func isHandedOff(rep []byte) bool { return bytes.HasPrefix(rep, handedOffPrefix) }
