package decide

import "github.com/rlstore/rlstore/server/internal/core"

// The attributes a decision's table entry declares (see decisionEntry):
// how it peeks, which keys it changes, and what it answers with no node to
// decide it. Each concern asks the entry, so a new decision gets them all.

// peekFrom is the peek form of a decision whose options start at argument
// first: its arguments as they are if one of them is PEEK, else with PEEK
// added.
func peekFrom(first int) core.PeekFunc {
	return func(args [][]byte) ([][]byte, bool) {
		for _, a := range args[min(first, len(args)):] {
			if core.EqualFold(a, "peek") {
				return args, true
			}
		}
		return append(args[:len(args):len(args)], []byte("PEEK")), false
	}
}

// peekThrottle is CL.THROTTLE's peek form: it has none but quantity 0.
func peekThrottle(args [][]byte) ([][]byte, bool) {
	if len(args) == 6 && string(args[5]) == "0" {
		return args, true
	}
	return nil, false
}

// changesCheck are RL.CHECK's rule keys, which live with its key.
func (d *Decisions) changesCheck(args [][]byte) ([][]byte, []byte) {
	p := d.pols.Get(args[1])
	if p == nil || len(args) < 3 {
		return nil, nil
	}
	return RuleKeys(p, args[2]), args[2]
}

// blindNative is a decision made without the key's state: admitted with
// nothing known, or denied with a wait of one second to retry after.
func blindNative(allow bool) []int64 {
	if allow {
		return []int64{1, 0, 0, 0, 0}
	}
	return []int64{0, 0, 0, 1000, 0}
}

// blindThrottle is blindNative in CL.THROTTLE's fields.
func blindThrottle(allow bool) []int64 {
	if allow {
		return []int64{0, 0, 0, -1, 0}
	}
	return []int64{1, 0, 0, 1, 0}
}

// blindCheck is blindNative with RL.CHECK's binding rule, the first.
func blindCheck(allow bool) []int64 { return append(blindNative(allow), 0) }
