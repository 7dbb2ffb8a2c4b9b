package loadtest

import "github.com/rlstore/rlstore/loadtest/internal/accuracy"

// tally counts outcomes; workers keep one each and the run sums them.
type tally struct {
	requests, allowed, denied, errors int64
}

func (t *tally) add(o accuracy.Outcome) {
	t.requests++
	switch o {
	case accuracy.OutcomeAllowed:
		t.allowed++
	case accuracy.OutcomeDenied:
		t.denied++
	case accuracy.OutcomeError:
		t.errors++
	}
}

func (t *tally) merge(o tally) {
	t.requests += o.requests
	t.allowed += o.allowed
	t.denied += o.denied
	t.errors += o.errors
}
