package accuracy

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// addBucketKey checks one key's events against a token-bucket rule, in
// nanoseconds relative to the key's first request.
func (acc *Result) addBucketKey(r Rule, events []Event, slack time.Duration) {
	base := events[0].Send
	for _, e := range events {
		base = min(base, e.Send)
	}
	var admits []interval
	for _, e := range events {
		switch e.Outcome {
		case OutcomeAllowed:
			acc.Admits++
			admits = append(admits, interval{e.Send - base - int64(slack), e.Recv - base + int64(slack)})
		case OutcomeUnknown:
			acc.Unknown++
		case OutcomeDenied:
			acc.Denials++
		}
	}
	acc.overBucket(r, admits)
}

// overBucket finds stretches [A, B] whose admits must all lie inside yet
// exceed Limit + rate·(B−A). With admits sorted by send time, admits i…k
// lie inside [send_i, B_k], B_k being the latest reply among admits 0…k (a
// bound at least as late as i…k's, so the test stays sound). The excess
//
//	(k−i+1)·cost − rate·(B_k − send_i) − Limit
//	  = [(k+1)·cost − rate·B_k] − [i·cost − rate·send_i] − Limit
//
// splits into a term in k and a term in i, so a suffix maximum over k finds
// the worst k for every i in linear time.
func (acc *Result) overBucket(r Rule, admits []interval) {
	slices.SortFunc(admits, func(a, b interval) int { return cmp.Compare(a.lo, b.lo) })
	rate := float64(r.Limit) / float64(r.Period) // units per ns
	cost := float64(r.Cost)
	best := make([]float64, len(admits)+1) // best[k]: max over k' ≥ k of the k' term
	best[len(admits)] = math.Inf(-1)
	latest := make([]int64, len(admits))
	for k, iv := range admits {
		latest[k] = iv.hi
		if k > 0 {
			latest[k] = max(latest[k], latest[k-1])
		}
	}
	for k := len(admits) - 1; k >= 0; k-- {
		best[k] = max(best[k+1], float64(k+1)*cost-rate*float64(latest[k]))
	}
	var worst float64
	for i, iv := range admits {
		excess := best[i] - (float64(i)*cost - rate*float64(iv.lo)) - float64(r.Limit)
		if excess > 1e-9 {
			acc.OverWindows++
			worst = max(worst, excess)
		}
	}
	acc.OverAdmitted += int64(math.Ceil(worst - 1e-9))
}
