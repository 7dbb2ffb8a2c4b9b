package loadtest

// classify reads a reply the way w's command defines it: an array whose
// elements are all integers is a decision, its first element 1 for allowed
// (or for denied when the workload is inverted, as CL.THROTTLE is).
func (w *Workload) classify(rep *Reply) Outcome {
	switch {
	case rep.Kind == KindError:
		return OutcomeError
	case rep.Kind != KindArray || !rep.IntArray || len(rep.Ints) == 0:
		return OutcomeOK
	case (rep.Ints[0] == 1) != w.Inverted:
		return OutcomeAllowed
	}
	return OutcomeDenied
}
