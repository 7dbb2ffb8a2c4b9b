package route

import (
	"errors"
	"strconv"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/handoff"
)

// RL.CLUSTER SETSLOT slot STABLE ends a slot's import wait on this node,
// as Redis's CLUSTER SETSLOT slot STABLE clears a slot's importing state
// (redis-cli --cluster fix sends that one; the RL. prefix keeps it from
// sending this). ALL in place of the slot ends every import wait that
// one would (handoff.EndStuckImports). See docs/cluster.md, "Safety".

// Replies of RL.CLUSTER SETSLOT, in Redis's words where Redis has them.
const (
	errBadSlot      = "ERR Invalid or out of range slot"
	errSetSlotUsage = "ERR Invalid RL.CLUSTER SETSLOT action or number of arguments. Try RL.CLUSTER HELP"
	allSlots        = "all"    // lower case: core.EqualFold's
	actionStable    = "stable" // the same
)

// setSlotCommand is RL.CLUSTER SETSLOT's entry; its arity is Redis's
// CLUSTER SETSLOT's, whose other actions take a node.
func (rt *Router) setSlotCommand() core.Command {
	return core.Command{Name: "setslot", Arity: -4, Run: rt.cmdRLClusterSetSlot,
		Summary: "Ends a slot's import wait on this node (STABLE): it serves the slot from the keys it holds"}
}

// cmdRLClusterSetSlot is RL.CLUSTER SETSLOT slot|ALL STABLE.
func (rt *Router) cmdRLClusterSetSlot(x *core.Session, args [][]byte) {
	if rt.clusterView(x) == nil {
		return
	}
	all := core.EqualFold(args[2], allSlots)
	slot, ok := policy.ParseInt(args[2])
	if !all && (!ok || slot < 0 || slot >= cluster.Slots) {
		x.Out.WriteError(errBadSlot)
		return
	}
	if len(args) != 4 || !core.EqualFold(args[3], actionStable) {
		x.Out.WriteError(errSetSlotUsage)
		return
	}
	if all {
		n, err := rt.ho.EndStuckImports()
		if err != nil {
			x.Out.WriteError(setSlotError(err, -1))
			return
		}
		x.Out.WriteInt(n)
		return
	}
	if _, err := rt.ho.EndImport(int(slot)); err != nil {
		x.Out.WriteError(setSlotError(err, int(slot)))
		return
	}
	x.Out.WriteString("OK")
}

// setSlotError words a refusal of handoff.EndImport or EndStuckImports.
func setSlotError(err error, slot int) string {
	var we *handoff.WaitError
	switch {
	case errors.Is(err, handoff.ErrNotOwner):
		return "ERR I'm not the owner of hash slot " + strconv.Itoa(slot) // Redis's words
	case errors.Is(err, handoff.ErrNoLease):
		return errClusterDown
	case errors.As(err, &we):
		return waitReply(we)
	}
	return "ERR " + err.Error()
}

// waitReply words a wait that EndImport leaves as it is.
func waitReply(we *handoff.WaitError) string {
	slot := strconv.Itoa(we.Slot)
	switch we.Why {
	case handoff.WaitCopying:
		return "ERR slot " + slot + " is being handed over by " + we.Peer + " now: its DONE ends the wait"
	case handoff.WaitServed:
		return "ERR slot " + slot + " is still served by " + we.Peer + ", whose table names it the owner: its handoff ends the wait"
	case handoff.WaitNoAnswer:
		return "ERR slot " + slot + " waits on " + we.Peer + ", which does not answer: it may still serve the slot"
	case handoff.WaitMoved:
		return "ERR slot " + slot + " moved on to another old owner while " + we.Peer + " was asked: try again"
	}
	return "ERR slot " + slot + " has waited " + strconv.FormatInt(we.Waited.Milliseconds(), 10) +
		" ms for " + we.Peer + ": its handoff may be under way until it has waited " +
		strconv.FormatInt(handoff.StableAfter.Milliseconds(), 10) + " ms"
}
