package region

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The clustered schedules (seeds from clusterSeeds on): region 0 is a
// cluster of sc.members nodes, each a Store with region 0's index and a
// member name of its own, holding the keys of the slots it owns; the
// other regions are one node each. Each key's slot moves to the next node
// every sc.handoff: the new owner takes a new epoch (Gain) and takes back
// the key's own units from the copy the old owner's key store had at its
// last sync (what a handoff or a replica moves), and the old owner stops
// deciding it. Batches to region 0 are fanned out by its gateway by the
// keys' owners (Split) and answered with one acknowledgement (Merge).
// After every window, the units all regions admitted in it must be within
// L + (R−1)·e, plus max(e, φ) for each move of the key near the window
// (and for a restart), R counting regions, not nodes. In the schedules
// with pull set the new owner also takes what the old one holds of the
// key (Hand, Take): then a move adds nothing to the bound.

// simNode is one node: a region's index and, in region 0 of a clustered
// schedule, its member index.
type simNode struct {
	region, member int
	st             *Store
}

// clusterOwner returns the member of region 0 that owns key i at true time t.
func (sc simSchedule) clusterOwner(i int, t int64) int {
	return (i + int(t/sc.handoff)) % sc.members
}

// moves returns how many times key i's slot changed owner in (from, to].
func (sc simSchedule) moves(from, to int64) int64 {
	if to <= 0 {
		return 0
	}
	return max(0, to/sc.handoff-max(0, from)/sc.handoff)
}

func runClusterSchedule(t testing.TB, sc simSchedule) simResult {
	rng := rand.New(rand.NewPCG(sc.seed, 0xfeed))
	base := int64(1_800_000_000) * int64(time.Second)
	newStore := func(r, m int, epoch int64) *Store {
		cfg := Defaults(r, sc.regions)
		cfg.Escrow, cfg.Reserve, cfg.Epoch, cfg.MaxRemote = sc.escrow, sc.reserve, epoch, sc.maxRemote
		if r == 0 {
			cfg.Member = fmt.Sprint("m", m)
		}
		cfg.Slot = simSlot // a gain names its slots: the others resend and echo only their keys
		st, err := New(cfg)
		require.NoError(t, err)
		if sc.room > 0 {
			st.SetRoom(func(n int64) bool { return n <= sc.room })
		}
		return st
	}
	var nodes []simNode
	byRegion := make([][]int, sc.regions) // node indexes by region, by member
	for r := range sc.regions {
		n := 1
		if r == 0 {
			n = sc.members
		}
		for m := range n {
			byRegion[r] = append(byRegion[r], len(nodes))
			nodes = append(nodes, simNode{region: r, member: m, st: newStore(r, m, 0)})
		}
	}
	cfg := nodes[0].st.Config()
	truth := make([]simTruth, len(sc.limits))
	keys := make([][]byte, len(sc.limits))
	for i, l := range sc.limits {
		truth[i].lim = l
		keys[i] = []byte(fmt.Sprint("k", i))
	}
	copies := make([]Own, len(sc.limits)) // each key's copy in region 0's key store, as of its owner's last sync
	type msg struct {
		at       int64
		from, to int // a batch: node → region; an acknowledgement: region → node
		batch    *Batch
		ack      *Ack
	}
	var flight []msg
	busyAt := make([][]int64, len(nodes)) // one exchange at a time per node and region
	for n := range busyAt {
		busyAt[n] = make([]int64, sc.regions)
		for p := range busyAt[n] {
			busyAt[n][p] = -1
		}
	}
	send := func(m msg, a, b int, now int64) {
		if now < sc.duration && (sc.cut(a, b, now) || rng.Float64() < sc.loss) {
			return
		}
		m.at = now + rng.Int64N(sc.delay+1)
		flight = append(flight, m)
	}
	// deliver hands batch b to region p: through its gateway's fan-out
	// for the cluster, to its one node otherwise.
	deliver := func(b *Batch, p int, now int64) *Ack {
		clock := base + now + sc.skew[p]
		if p != 0 {
			return nodes[byRegion[p][0]].st.Receive(b, clock)
		}
		parts := Split(b, sc.members, func(key string) int {
			var i int
			_, _ = fmt.Sscanf(key, "k%d", &i)
			return sc.clusterOwner(i, now)
		}, uint64(now/sc.handoff))
		acks := make([]*Ack, len(parts))
		for m, pt := range parts {
			acks[m] = nodes[byRegion[0][m]].st.Receive(pt.Batch, clock)
		}
		return Merge(b, parts, acks)
	}
	var res simResult
	windows := newSimWindows(truth, &res)
	check := func(now int64, all bool) {
		windows.closed(now, all, func(tr *simTruth, id, end, total int64, ratio float64) {
			e, phi := cfg.Budgets(tr.lim.Limit)
			// Moves of the key's slot from a second before the window to a
			// second after it (the skew), each losing at most max(e, φ).
			from, to := tr.lim.start(tr.lim.firstOf(id))-base-int64(time.Second), end-base+int64(time.Second)
			moved := sc.moves(from, to)
			bound := cfg.Bound(tr.lim.Limit)
			if moved == 0 && sc.restart < 0 {
				res.ofBound = max(res.ofBound, float64(total)/float64(bound))
			}
			res.withMoves = max(res.withMoves, float64(total)/float64(bound))
			if !sc.pull {
				bound += moved * max(e, phi) // with the old owner's units taken, a move loses none
			}
			if sc.restart >= 0 {
				bound += max(e, phi)
			}
			if total > bound {
				t.Fatalf("%v\nwindow ending %d of %v: %d admitted, bound %d with %d moves (ratio %.3f)",
					sc, id, tr.lim, total, bound, moved, ratio)
			}
		})
	}
	end := sc.duration + int64(8*time.Second)
	for now := int64(0); now < end; now += int64(simTick) {
		busy, healed := now < sc.duration, now >= sc.duration
		var keep []msg
		var acks []msg
		for _, m := range flight {
			switch {
			case m.at > now:
				keep = append(keep, m)
			case m.batch != nil && !healed && sc.cut(nodes[m.from].region, m.to, now):
			case m.ack != nil && !healed && sc.cut(m.from, nodes[m.to].region, now):
			case m.batch != nil:
				if a := deliver(m.batch, m.to, now); a != nil {
					acks = append(acks, msg{from: m.to, to: m.from, ack: a})
				}
			default:
				nd := nodes[m.to]
				nd.st.Acked(m.ack, base+now+sc.skew[nd.region])
				busyAt[m.to][m.from] = -1
			}
		}
		flight = keep
		for _, m := range acks {
			send(m, m.from, nodes[m.to].region, now)
		}
		// A move: every key's slot goes to the next node, which gains it.
		if sc.moves(now-int64(simTick), now) > 0 && now < sc.duration {
			for m := range sc.members {
				nd := &nodes[byRegion[0][m]]
				var gained []string
				var slots []int
				for i := range keys {
					if sc.clusterOwner(i, now) == m && sc.clusterOwner(i, now-int64(simTick)) != m {
						gained = append(gained, string(keys[i]))
						slots = append(slots, i)
					}
				}
				if len(gained) == 0 {
					continue
				}
				if sc.pull {
					// The old owners are alive: the new one takes what they
					// hold of its gained keys (Hand, Take), as the server
					// pulls it from the region's other nodes at a gain.
					for i := range keys {
						if sc.clusterOwner(i, now) == m && sc.clusterOwner(i, now-int64(simTick)) != m {
							old := nodes[byRegion[0][sc.clusterOwner(i, now-int64(simTick))]].st
							nd.st.Take(old.Hand(func(key string) bool { return key == string(keys[i]) }))
						}
					}
				}
				nd.st.Gain(base+now+sc.skew[0], uint64(now/sc.handoff), func(key string) bool {
					for _, g := range gained {
						if g == key {
							return true
						}
					}
					return !nd.st.Has([]byte(key))
				}, slots)
				for i := range keys {
					if sc.clusterOwner(i, now) == m && copies[i].Key != "" {
						nd.st.Restore(copies[i])
					}
				}
			}
		}
		if now == sc.restartAt/int64(simTick)*int64(simTick) && sc.restart >= 0 {
			// A restart of a node: of the one-node region, or of a node of
			// the cluster, which then takes its keys back from the copies.
			n := byRegion[sc.restart][0]
			if sc.restart == 0 {
				n = byRegion[0][rng.IntN(sc.members)]
			}
			nd := &nodes[n]
			nd.st = newStore(nd.region, nd.member, base+now+sc.skew[nd.region])
			for i := range keys {
				if nd.region == 0 && sc.clusterOwner(i, now) == nd.member && copies[i].Key != "" {
					nd.st.Restore(copies[i])
				}
			}
		}
		for n := range nodes {
			nd := &nodes[n]
			r := nd.region
			clock := base + now + sc.skew[r]
			if busy {
				for i := range truth {
					if rng.Float64() >= sc.hot(r, now) {
						continue
					}
					if r == 0 && sc.clusterOwner(i, now) != nd.member {
						continue // the cluster forwards it to the key's owner
					}
					l := truth[i].lim
					cost := 1 + rng.Int64N(max(1, l.Limit/40))
					if d := nd.st.Decide(keys[i], l, clock, cost, false); d.Allowed {
						cur, _ := l.span(clock)
						truth[i].counts.add(cur, cost)
					}
				}
			}
			if (now/int64(simTick))%10 == int64(n)%10 || nd.st.Urgent() {
				var ready []bool
				if sc.oneAtATime {
					ready = make([]bool, sc.regions)
					for p, since := range busyAt[n] {
						ready[p] = since < 0 || now-since >= simLinkTimeout
					}
				}
				for p, b := range nd.st.SyncReady(clock, ready) {
					if b != nil {
						busyAt[n][p] = now
						send(msg{from: n, to: p, batch: b}, r, p, now)
					}
				}
				nd.st.Sweep(clock, 100)
				if r == 0 { // the key store's copies of the keys it owns follow its syncs
					for i := range keys {
						if sc.clusterOwner(i, now) == nd.member {
							if o, ok := nd.st.OwnOf(keys[i]); ok {
								copies[i] = o
							}
						}
					}
				}
			}
		}
		check(now, false)
	}
	check(end, true)
	if res.windows > 0 {
		res.used /= float64(res.windows)
	}
	for _, nd := range nodes {
		res.refused += nd.st.Stats(0).KeysRefused
	}
	return res
}

// simSlot is a simulated key's slot: key i ("k"+i) is alone in slot i.
func simSlot(key string) int {
	i, _ := strconv.Atoi(strings.TrimPrefix(key, "k"))
	return i
}
