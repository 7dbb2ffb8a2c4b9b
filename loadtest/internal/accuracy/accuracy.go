package accuracy

import (
	"cmp"
	"slices"
	"time"
)

// Rule is a windowed limit the accuracy checker holds a server to. Time is
// cut into buckets Unit wide, counted from the Unix epoch. Sliding: a
// decision in bucket f counts the admitted units of buckets f-Units+1 … f.
// Aligned (fixed window): it counts those of the Units-bucket group holding
// f. Either way the request is admitted iff that count + Cost ≤ Limit.
//
// RL.SLIDE is sliding with 1 s buckets, RL.LOG sliding with 1 ms buckets,
// RL.FIXED aligned with 1 s buckets.
//
// With Period set, the rule is a token bucket instead (RL.TOKEN, RL.LEAKY,
// CL.THROTTLE, GCRA): it starts full with Limit units and refills Limit per
// Period, so no stretch of time [A, B] can hold more than
// Limit + Limit·(B−A)/Period admitted units; Unit and Units are unused.
type Rule struct {
	Limit   int64         `json:"limit"`
	Unit    time.Duration `json:"unit_ns,omitempty"`
	Units   int64         `json:"units,omitempty"`
	Aligned bool          `json:"aligned,omitempty"`
	Period  time.Duration `json:"period_ns,omitempty"`
	Cost    int64         `json:"cost"`
}

// Event is one request as the client saw it. Send is read just before the
// request's bytes are written and Recv just after its reply is parsed, both
// from the wall clock (Unix ns) that a server on the same host also reads.
type Event struct {
	Key     uint64
	Send    int64
	Recv    int64
	Outcome Outcome
}

// Result is the checker's verdict over a trace.
//
// The server decides each request at some instant d of its own clock between
// Send and Recv; the client cannot know which. Only what holds for every
// possible d counts:
//   - over-admission: a window whose admits must all lie inside it (their
//     whole [Send, Recv] maps into the window's buckets) yet exceed Limit;
//   - under-admission: a denial for which, at every instant it may have been
//     decided, even counting every admit that might have been in its window
//     (and every request whose outcome is unknown) leaves room for Cost.
//
// Slack widens every [Send, Recv] on both sides, for a server whose clock
// lags or leads the client's (0 on one host).
type Result struct {
	Rule          Rule          `json:"rule"`
	Slack         time.Duration `json:"slack_ns"`
	Keys          int           `json:"keys"`
	Admits        int64         `json:"admits"`
	Denials       int64         `json:"denials"`
	Unknown       int64         `json:"unknown"`
	Straddling    int64         `json:"straddling"`     // admits whose bucket is uncertain
	OverAdmitted  int64         `json:"over_admitted"`  // Σ over keys of the worst window's units above Limit
	OverWindows   int64         `json:"over_windows"`   // windows provably above Limit
	UnderAdmitted int64         `json:"under_admitted"` // denials provably made with room left
	UnderChecked  bool          `json:"under_checked"`  // false for token buckets, whose denials are not judged
}

// interval is an event's possible decision buckets, lo … hi.
type interval struct{ lo, hi int64 }

// Check holds the events of a trace to r. Events are grouped by key;
// their order does not matter, and events is reordered.
func Check(r Rule, events []Event, slack time.Duration) Result {
	acc := Result{Rule: r, Slack: slack, UnderChecked: r.Period == 0}
	slices.SortFunc(events, func(a, b Event) int { return cmp.Compare(a.Key, b.Key) })
	for len(events) > 0 {
		n := 1
		for n < len(events) && events[n].Key == events[0].Key {
			n++
		}
		acc.addKey(r, events[:n], slack)
		events = events[n:]
	}
	return acc
}

// addKey checks one key's events.
func (acc *Result) addKey(r Rule, events []Event, slack time.Duration) {
	acc.Keys++
	if r.Period > 0 {
		acc.addBucketKey(r, events, slack)
		return
	}
	var admits, maybe, denials []interval
	for _, e := range events {
		iv := interval{r.bucket(e.Send - int64(slack)), r.bucket(e.Recv + int64(slack))}
		switch e.Outcome {
		case OutcomeAllowed:
			acc.Admits++
			admits = append(admits, iv)
			maybe = append(maybe, iv)
			if iv.lo != iv.hi {
				acc.Straddling++
			}
		case OutcomeUnknown:
			acc.Unknown++
			maybe = append(maybe, iv)
		case OutcomeDenied:
			acc.Denials++
			denials = append(denials, iv)
		}
	}
	acc.over(r, admits)
	acc.under(r, maybe, denials)
}

func (r Rule) bucket(ns int64) int64 { return floorDiv(ns, int64(r.Unit)) }

// window returns the buckets a decision in bucket f counts.
func (r Rule) window(f int64) (a, b int64) {
	if r.Aligned {
		a = f - mod(f, r.Units)
		return a, a + r.Units - 1
	}
	return f - r.Units + 1, f
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

func mod(a, b int64) int64 { return a - floorDiv(a, b)*b }
