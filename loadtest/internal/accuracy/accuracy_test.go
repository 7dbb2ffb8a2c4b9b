package accuracy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// base is a whole hour since the epoch, so windows align at t = 0.
const base = int64(1_800_000_000) * int64(time.Second)

// at builds an event whose request was sent at sendMs and answered at recvMs
// after base.
func at(key uint64, sendMs, recvMs int64, o Outcome) Event {
	return Event{Key: key, Send: base + sendMs*1e6, Recv: base + recvMs*1e6, Outcome: o}
}

func slide(limit, secs int64) Rule {
	return Rule{Limit: limit, Unit: time.Second, Units: secs, Cost: 1}
}

const (
	ok = OutcomeAllowed
	no = OutcomeDenied
)

func TestAccuracyCorrectTraceIsClean(t *testing.T) {
	events := []Event{
		at(1, 100, 101, ok), at(1, 200, 201, ok), at(1, 300, 301, ok),
		at(1, 400, 401, no), at(1, 1500, 1501, no),
		at(1, 2100, 2101, ok), // seconds 1..2 hold nothing yet
	}
	acc := Check(slide(3, 2), events, 0)
	assert.Equal(t, int64(4), acc.Admits)
	assert.Equal(t, int64(2), acc.Denials)
	assert.Zero(t, acc.OverAdmitted, "over-admitted")
	assert.Zero(t, acc.UnderAdmitted, "under-admitted")
}

func TestAccuracyFindsOverAdmission(t *testing.T) {
	events := []Event{
		at(1, 100, 101, ok), at(1, 200, 201, ok), at(1, 300, 301, ok),
		at(1, 1400, 1401, ok), at(1, 1500, 1501, ok), // 5 in seconds 0..1, limit 3
	}
	acc := Check(slide(3, 2), events, 0)
	assert.Equal(t, int64(2), acc.OverAdmitted, "worst window holds 5 of 3")
	assert.Equal(t, int64(1), acc.OverWindows, "only seconds 0..1 hold more than 3")
	assert.Zero(t, acc.UnderAdmitted)
}

func TestAccuracyFindsUnderAdmission(t *testing.T) {
	events := []Event{
		at(1, 100, 101, ok),
		at(1, 500, 501, no),   // 1 of 3 used: wrongly denied
		at(1, 1200, 1201, no), // seconds 0..1 hold 1: wrongly denied
		at(2, 100, 101, no),   // a fresh key denied
	}
	acc := Check(slide(3, 2), events, 0)
	assert.Equal(t, int64(3), acc.UnderAdmitted)
	assert.Zero(t, acc.OverAdmitted)
	assert.Equal(t, 2, acc.Keys)
}

func TestAccuracyGivesStraddlingAdmitsTheBenefitOfTheDoubt(t *testing.T) {
	events := []Event{
		at(1, 100, 101, ok), at(1, 200, 201, ok), at(1, 300, 301, ok),
		at(1, 950, 1050, ok), // may have been decided in second 1
	}
	acc := Check(slide(3, 1), events, 0)
	assert.Zero(t, acc.OverAdmitted, "the fourth admit may belong to second 1")
	assert.Equal(t, int64(1), acc.Straddling)

	events = append(events, at(1, 999, 1001, ok)) // a fifth that may also be in second 1
	acc = Check(slide(3, 1), events, 0)
	assert.Zero(t, acc.OverAdmitted, "both may belong to second 1, which then holds 2")
}

func TestAccuracyStraddlingDenialIsOnlyWrongIfWrongThroughout(t *testing.T) {
	full := []Event{at(1, 100, 101, ok), at(1, 200, 201, ok), at(1, 300, 301, ok)}
	acc := Check(slide(3, 1), append(full, at(1, 950, 1050, no)), 0)
	assert.Zero(t, acc.UnderAdmitted, "decided in second 0 it was right")

	acc = Check(slide(3, 1), append(full, at(1, 1050, 1150, no)), 0)
	assert.Equal(t, int64(1), acc.UnderAdmitted, "second 1 was empty")
}

func TestAccuracyCountsStraddlingAdmitsAgainstDenials(t *testing.T) {
	events := []Event{
		at(1, 100, 101, ok), at(1, 200, 201, ok),
		at(1, 900, 1100, ok), // may be in second 1
		at(1, 1500, 1501, no),
	}
	acc := Check(slide(1, 1), events, 0)
	assert.Zero(t, acc.UnderAdmitted, "second 1 may hold the straddling admit")
	assert.Equal(t, int64(1), acc.OverAdmitted, "second 0 surely holds 2 of 1")
}

func TestAccuracyUnknownOutcomesMayHaveBeenAdmitted(t *testing.T) {
	events := []Event{at(1, 100, 101, OutcomeUnknown), at(1, 200, 201, no)}
	acc := Check(slide(1, 1), events, 0)
	assert.Zero(t, acc.UnderAdmitted)
	assert.Equal(t, int64(1), acc.Unknown)

	events = []Event{at(1, 100, 101, OutcomeError), at(1, 200, 201, no)}
	acc = Check(slide(1, 1), events, 0)
	assert.Equal(t, int64(1), acc.UnderAdmitted, "an error reply consumed nothing")
}

func TestAccuracyAlignedWindows(t *testing.T) {
	events := []Event{
		at(1, 1500, 1501, ok), at(1, 1600, 1601, ok), // window [0 s, 2 s)
		at(1, 2100, 2101, ok), at(1, 2200, 2201, ok), // window [2 s, 4 s)
		at(1, 2300, 2301, no),
	}
	fixed := slide(2, 2)
	fixed.Aligned = true
	acc := Check(fixed, events, 0)
	assert.Zero(t, acc.OverAdmitted, "each fixed window holds 2")
	assert.Zero(t, acc.UnderAdmitted)

	acc = Check(slide(2, 2), events, 0)
	assert.Equal(t, int64(2), acc.OverAdmitted, "as a sliding window, seconds 1..2 hold 4")
}

func TestAccuracyMillisecondLog(t *testing.T) {
	log := Rule{Limit: 2, Unit: time.Millisecond, Units: 100, Cost: 1}
	events := []Event{at(1, 0, 0, ok), at(1, 10, 10, ok), at(1, 50, 50, no), at(1, 100, 100, ok)}
	acc := Check(log, events, 0)
	assert.Zero(t, acc.OverAdmitted, "(0, 100] excludes the admit at 0")
	assert.Zero(t, acc.UnderAdmitted)

	events = append(events, at(1, 99, 99, ok))
	acc = Check(log, events, 0)
	assert.Equal(t, int64(1), acc.OverAdmitted, "(−1, 99] holds 0, 10 and 99")
}

func TestAccuracySlackWidensIntervals(t *testing.T) {
	events := []Event{at(1, 900, 901, ok), at(1, 950, 951, ok)}
	assert.Equal(t, int64(1), Check(slide(1, 1), events, 0).OverAdmitted)
	assert.Zero(t, Check(slide(1, 1), events, 100*time.Millisecond).OverAdmitted,
		"with 100 ms slack the second admit may be in second 1")
}

func TestAccuracyCost(t *testing.T) {
	r := slide(5, 1)
	r.Cost = 2
	events := []Event{at(1, 100, 101, ok), at(1, 200, 201, ok), at(1, 300, 301, no)}
	acc := Check(r, events, 0)
	assert.Zero(t, acc.UnderAdmitted, "4 used, 2 more would be 6 > 5")
	assert.Zero(t, acc.OverAdmitted)
}

// TestAccuracyAgainstReferenceLimiter replays a random trace through an
// exact sliding-window limiter and checks the checker finds nothing, then
// flips decisions and checks it finds them.
func TestAccuracyAgainstReferenceLimiter(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	rule := slide(5, 3)
	var events []Event
	counts := map[uint64]map[int64]int64{}
	now := int64(0)
	for range 5000 {
		now += r.Int64N(20)
		key := r.Uint64N(4)
		events = append(events, at(key, now, now+r.Int64N(3), decide(counts, key, now/1000, rule)))
	}
	acc := Check(rule, append([]Event(nil), events...), 0)
	assert.Zero(t, acc.OverAdmitted)
	assert.Zero(t, acc.UnderAdmitted)
	assert.Positive(t, acc.Denials)

	flipped := 0
	for i := range events {
		if events[i].Outcome == no && i%50 == 0 {
			events[i].Outcome = ok
			flipped++
		}
	}
	acc = Check(rule, events, 0)
	assert.Positive(t, acc.OverAdmitted, "%d denials turned into admits", flipped)
}

// decide is a brute-force sliding window over per-second counters.
func decide(counts map[uint64]map[int64]int64, key uint64, sec int64, rule Rule) Outcome {
	if counts[key] == nil {
		counts[key] = map[int64]int64{}
	}
	var sum int64
	for s := sec - rule.Units + 1; s <= sec; s++ {
		sum += counts[key][s]
	}
	if sum+rule.Cost > rule.Limit {
		return no
	}
	counts[key][sec] += rule.Cost
	return ok
}

func bucket(capacity int64, period time.Duration) Rule {
	return Rule{Limit: capacity, Period: period, Cost: 1}
}

func TestBucketAccuracyCleanTrace(t *testing.T) {
	// 3 at once, then one every 334 ms: a 3-token bucket refilling 3 a second.
	events := []Event{at(1, 0, 1, ok), at(1, 1, 2, ok), at(1, 2, 3, ok), at(1, 10, 11, no),
		at(1, 336, 337, ok), at(1, 670, 671, ok), at(1, 1004, 1005, ok)}
	acc := Check(bucket(3, time.Second), events, 0)
	assert.Equal(t, int64(6), acc.Admits)
	assert.Zero(t, acc.OverAdmitted)
	assert.False(t, acc.UnderChecked)
}

func TestBucketAccuracyFindsOverAdmission(t *testing.T) {
	events := []Event{at(1, 0, 1, ok), at(1, 1, 2, ok), at(1, 2, 3, ok), at(1, 10, 11, ok), at(1, 20, 21, ok)}
	acc := Check(bucket(3, time.Second), events, 0)
	assert.Equal(t, int64(2), acc.OverAdmitted, "5 admits in 21 ms from a 3-token bucket refilling 3/s")
	assert.Positive(t, acc.OverWindows)
}

func TestBucketAccuracyGivesUncertainTimesTheBenefitOfTheDoubt(t *testing.T) {
	// The fourth admit's reply took 400 ms: it may have been decided after
	// a token came back.
	events := []Event{at(1, 0, 1, ok), at(1, 1, 2, ok), at(1, 2, 3, ok), at(1, 10, 410, ok)}
	assert.Zero(t, Check(bucket(3, time.Second), events, 0).OverAdmitted)
	events[3] = at(1, 10, 300, ok)
	assert.Equal(t, int64(1), Check(bucket(3, time.Second), events, 0).OverAdmitted,
		"by 300 ms less than one token has come back")
}

// TestBucketAccuracyAgainstGCRA replays a random trace through an exact
// GCRA and finds nothing, then turns some denials into admits and finds them.
func TestBucketAccuracyAgainstGCRA(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	rule := bucket(5, time.Second) // emission interval 200 ms
	tat := map[uint64]int64{}
	var events []Event
	now := int64(0)
	for range 5000 {
		now += r.Int64N(30)
		key := r.Uint64N(3)
		events = append(events, at(key, now, now+r.Int64N(3), gcra(tat, key, now, 200, 5)))
	}
	acc := Check(rule, append([]Event(nil), events...), 0)
	assert.Zero(t, acc.OverAdmitted)
	assert.Positive(t, acc.Denials)
	for i := range events {
		if events[i].Outcome == no && i%40 == 0 {
			events[i].Outcome = ok
		}
	}
	assert.Positive(t, Check(rule, events, 0).OverAdmitted)
}

// gcra decides at ms now with emission interval t and burst capacity c.
func gcra(tat map[uint64]int64, key uint64, now, t, c int64) Outcome {
	next := max(tat[key], now) + t
	if now < next-c*t {
		return no
	}
	tat[key] = next
	return ok
}
