package loadtest

import (
	"github.com/rlstore/rlstore/loadtest/internal/accuracy"
	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// classify reads a reply the way w's command defines it: an array whose
// elements are all integers is a decision, its first element 1 for allowed
// (or for denied when the workload is inverted, as CL.THROTTLE is).
func (w *Workload) classify(rep *resp.Reply) accuracy.Outcome {
	switch {
	case rep.Kind == resp.KindError:
		return accuracy.OutcomeError
	case rep.Kind != resp.KindArray || !rep.IntArray || len(rep.Ints) == 0:
		return accuracy.OutcomeOK
	case (rep.Ints[0] == 1) != w.Inverted:
		return accuracy.OutcomeAllowed
	}
	return accuracy.OutcomeDenied
}
