package cluster

import (
	"os"
	"slices"
	"time"
)

// A cold start in the simulation: the README's nodes started together,
// each given the others as seeds, with empty data dirs. The settled
// schedules start from a cluster whose every node has granted every
// other and agrees on one table, so the formation rules (a joiner's
// lone table, its guesses, the tables of a moment; the server's
// relayGuess) never ran in them. A cold schedule instead starts each
// node at a scripted time, all at once, 50-100 ms apart, or anywhere in
// 2 s, with no member met. A node learns the others as the server's
// memberlist does:
//   - it joins every seed it has not met at its start and every second
//     after (the server's retry of missing seeds), a push-pull that
//     teaches each side the other and the other's members;
//   - a node it has met tells it of members met since, on its lease
//     requests (memberlist's gossip, piggybacked);
//   - a message from a member not met is a meeting (a probe).
//
// Its first table with another member counts nothing of its lone table
// (the server's handoffHook with Joins): it imports each slot it owns
// from the slot's runner-up, a guess, and asks every member of the table
// with RL.PEER PULL, and it asks again at each table change for the
// slots it still imports as a guess or a rejoin, as the server's
// pullImports does (the settled model sends PULLs at a restart or a
// rejoin only; cold schedules send them as the server does).
//
// Faults wait until a drawn calm time (0, 2, 4 or 10 s), so that some
// formations are measured alone and others meet a crash, a pause or a
// cut. A restart later in the schedule is the settled model's: its
// process has a data dir that remembers every member.
//
// What is not the server's: the lease counts every member from the
// start (the model's known set is fixed), where the server's counts the
// members met (Known grows as they meet). With three nodes the quorum is
// two either way; with four or five the model needs a majority of all
// to serve, so two nodes that meet first serve only once a third has met
// them.
//
// What a process vouches for (simColdVouch) counts the server's known
// set, though: the members it met and those in the sets the members it
// hears from send (the server's msgKnown), dead ones included.

// simCold is RL_SIM_COLD: "1" runs each seed's settled schedule and
// then a cold one, "only" runs every schedule cold, and anything else
// (the default) none. Cold schedules are not in the default runs: they
// find schedules that serve a key from less than the last server left
// (testdata/sim-cold-loss-seeds.txt), which the settled ones of the same
// seeds do not. CI runs 2000 of them (.ci/run), those seeds logged.
var simCold = os.Getenv("RL_SIM_COLD")

// simColdCalm is the longest calm time: long enough for a formation to
// wait the import wait and its RELEASED answer, after a start at 2 s.
const simColdCalm = 10 * time.Second

// simColdGaps are a cold schedule's start shapes: at once, a shell's
// 50-100 ms apart, and anywhere within 2 s.
const (
	simColdAtOnce = iota
	simColdStaggered
	simColdSpread
)

// coldSchedule draws a cold schedule's start times and calm time.
func (s *sim) coldSchedule() {
	s.startAt = make([]time.Duration, len(s.nodes))
	switch s.r.IntN(3) {
	case simColdStaggered:
		var at time.Duration
		for _, i := range s.r.Perm(len(s.nodes)) {
			s.startAt[i] = at
			at += time.Duration(50+s.r.IntN(51)) * time.Millisecond
		}
	case simColdSpread:
		for i := range s.startAt {
			s.startAt[i] = time.Duration(s.r.IntN(2000)) * time.Millisecond
		}
	}
	s.calm = []time.Duration{0, 2 * time.Second, 4 * time.Second, simColdCalm, simColdCalm}[s.r.IntN(5)]
	s.logf("cold start at %v, faults from %v", s.startAt, s.calm)
}

// coldStarts starts the nodes whose start time has come.
func (s *sim) coldStarts() {
	if !s.cold {
		return
	}
	for i, n := range s.nodes {
		if !n.started && s.startAt[i] <= s.now {
			s.start(i)
			n.nextJoin = n.local(s.now)
			s.logf("%s starts cold", n.name)
		}
	}
}

// joins sends node i's joins to the members it has not met, at its
// start and every second after (the server's --join retry).
func (s *sim) joins(i int) {
	n := s.nodes[i]
	now := n.local(s.now)
	if len(n.unmet) == 0 || now < n.nextJoin {
		return
	}
	for j, m := range s.known {
		if n.unmet[m] {
			s.send(simMsg{kind: simJoin, from: i, to: j, members: s.gossip(i), known: s.knownOf(i)})
		}
	}
	n.nextJoin = now + int64(time.Second)
}

// gossip is what node i tells of its members in a cold schedule: those
// it has alive (nil in a settled schedule, whose nodes know them all).
func (s *sim) gossip(i int) []int {
	if !s.cold {
		return nil
	}
	var alive []int
	for j, m := range s.known {
		if s.nodes[i].alive[m] {
			alive = append(alive, j)
		}
	}
	return alive
}

// meet makes node i meet the members of members it has not met, and
// reports whether it met any; the caller rebuilds its table.
func (s *sim) meet(i int, members []int) bool {
	n := s.nodes[i]
	met := false
	for _, j := range members {
		if m := s.known[j]; n.unmet[m] {
			delete(n.unmet, m)
			n.alive[m], n.heard[m], n.knows[m] = true, s.now, true
			n.nextReq = n.local(s.now) // the server's kickLease: the known set grew
			s.logf("%s meets %s", n.name, m)
			met = true
		}
	}
	return met
}

// tablePull is the server's pullImports at a table change, in a cold
// schedule: at node i's first table with another member (first) it
// imports every slot it owns from its guess, and at each later change
// (changed) it asks again for the slots it still imports as a guess or
// a rejoin, every member of its table.
func (s *sim) tablePull(i int, first, changed bool) {
	if !s.cold {
		return
	}
	n := s.nodes[i]
	var slots []int
	switch {
	case first:
		slots = s.importOwn(i)
		for _, slot := range slots {
			im := n.importing[slot]
			im.guess = true // the server's importFrom, counting nothing of the lone table
			n.importing[slot] = im
		}
	case changed:
		for slot, im := range n.importing {
			if im.guess || im.keep {
				slots = append(slots, slot)
			}
		}
		slices.Sort(slots)
	}
	if len(slots) == 0 {
		return
	}
	s.logf("%s pulls %v (first %v)", n.name, slots, first)
	for _, m := range n.view.Table.Nodes() {
		if m.Name != n.name {
			s.send(simMsg{kind: simPull, from: i, to: s.index(m.Name), slots: slots})
		}
	}
}

// noteFormed records when every slot is first served after the last
// node's start, and whether a fault could have come before.
func (s *sim) noteFormed() {
	if !s.cold || s.formed >= 0 {
		return
	}
	last := slices.Max(s.startAt)
	if s.now < last {
		return
	}
	if s.now >= s.calm {
		s.faultedBefore = true
	}
	for _, slot := range s.slots {
		if !slices.ContainsFunc(s.nodes, func(n *simNode) bool { return s.serves(s.index(n.name), slot) }) {
			return
		}
	}
	s.formed = s.now - last
	s.logf("formed %v after the last start", s.formed)
}

// simColdCounts are the cold schedules' formations in a calm time of
// simColdCalm: how long after the last start every slot was served, by
// bucket (never: not before the faults began).
var simColdCounts struct {
	schedules, calm                       int
	under1s, under3s, underWait, overWait int
	never                                 int
	undocumented                          []uint64
}

// noteCold adds s, a finished cold schedule, to simColdCounts.
func noteCold(s *sim) {
	c := &simColdCounts
	c.schedules++
	if s.calm < simColdCalm {
		return
	}
	c.calm++
	switch f := s.formed; {
	case f < 0 || s.faultedBefore:
		c.never++
	case f < time.Second:
		c.under1s++
	case f < 3*time.Second:
		c.under3s++
	case f < simImportWait:
		c.underWait++
	default:
		c.overWait++
	}
}
