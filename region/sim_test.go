package region

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// The deterministic simulation: R regions, each a Store with its own
// skewed clock, exchanging batches over a scripted network (delays, loss,
// partitions of one region and of all) while skewed traffic hits two global
// keys, a sliding and a fixed window. After every window that all clocks
// have passed, the units all regions admitted in it must stay within
// Config.Bound, L + (R−1)·e ≤ (1+α)·L. At the end the network heals, and
// every region's own measurement of each window (Stats) must match the
// truth.

const simTick = 10 * time.Millisecond

type simMsg struct {
	at       int64 // true time of delivery
	from, to int
	batch    *Batch
	ack      *Ack
}

type simCut struct {
	from, to int64 // true times
	region   int   // -1: every region is cut off from every other
}

type simSchedule struct {
	seed       uint64
	regions    int
	escrow     float64
	reserve    float64
	skew       []int64 // per region clock offset
	delay      int64   // the most a message takes
	loss       float64
	cuts       []simCut
	pattern    int // 0 one hot, 1 all hot, 2 alternating, 3 bursts
	limits     []Limit
	duration   int64
	restart    int // region that restarts (loses its state) at restartAt, or -1
	restartAt  int64
	oneAtATime bool // each link carries one exchange at a time, as the server's do (SyncReady): odd seeds
	maxRemote  int  // Config.MaxRemote: 1 in a third of the schedules (seed%3 == 2), so the second key is refused where only others decide it
	// room bounds the table's bytes (SetRoom, as the server's --maxmemory
	// does) instead of maxRemote in half of those (seed%6 == 5): about one
	// key with its buckets, so a new key held for others is refused.
	room int64
	// cluster makes region 0 a cluster of members nodes (docs/regions.md,
	// "A region made of a cluster"; simcluster_test.go): each key is
	// decided there only by the node that owns its slot, and the slots
	// move to the next node every handoff (a handoff, or a failover).
	// Seeds from clusterSeeds on.
	cluster bool
	members int
	handoff int64
	// pull: at a move the new owner takes what the old one holds of the
	// key (Store.Hand, Store.Take), as a node whose old owner is alive
	// does; then the bound has no term for moves. Clustered seeds with
	// seed/2%2 == 0.
	pull bool
}

// clusterSeeds is where the seeds of clustered schedules start.
const clusterSeeds = 1 << 32

func newSchedule(seed uint64) simSchedule {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	sc := simSchedule{seed: seed, regions: 2 + rng.IntN(4)}
	sc.escrow = []float64{0.05, 0.1, 0.2, 0.5}[rng.IntN(4)]
	sc.reserve = []float64{0, 0, 0.25, 0.5, 1}[rng.IntN(5)]
	maxSkew := int64(time.Second)
	for range sc.regions {
		sc.skew = append(sc.skew, rng.Int64N(maxSkew+1)-maxSkew/2) // any two within maxSkew
	}
	sc.delay = []int64{0, int64(20 * time.Millisecond), int64(100 * time.Millisecond), int64(500 * time.Millisecond)}[rng.IntN(4)]
	sc.loss = []float64{0, 0, 0.05, 0.3}[rng.IntN(4)]
	sc.duration = int64(20 * time.Second)
	for range rng.IntN(3) {
		from := rng.Int64N(sc.duration)
		cut := simCut{from: from, to: from + rng.Int64N(int64(10*time.Second)), region: rng.IntN(sc.regions+1) - 1}
		sc.cuts = append(sc.cuts, cut)
	}
	sc.pattern = rng.IntN(4)
	sc.restart = -1
	if rng.IntN(3) == 0 {
		sc.restart, sc.restartAt = rng.IntN(sc.regions), rng.Int64N(sc.duration)
	}
	sc.limits = []Limit{
		{Kind: window.KindSlide, Limit: 10 + rng.Int64N(2000), Window: time.Duration(1+rng.Int64N(8)) * time.Second},
		{Kind: window.KindFixed, Limit: 10 + rng.Int64N(2000), Window: time.Duration(200+rng.Int64N(3000)) * time.Millisecond},
	}
	sc.oneAtATime = seed%2 == 1 // not drawn from rng: the other draws, and the seeds in testdata, stay as they were
	if seed >= clusterSeeds {
		sc.cluster, sc.handoff = true, int64(2*time.Second)+int64(seed%5)*int64(time.Second)
		sc.members = 2 + int(seed/5%3)
		sc.pull = seed/2%2 == 0
	}
	switch {
	case seed%6 == 5:
		sc.room = 1500 // not drawn either
	case seed%3 == 2:
		sc.maxRemote = 1
	}
	return sc
}

func (sc simSchedule) String() string {
	return fmt.Sprintf("seed %d: R=%d α=%.2f β=%.2f delay=%v loss=%.2f cuts=%v pattern=%d limits=%v skew=%v restart=%d at %v one-at-a-time=%v max-remote=%d room=%d cluster=%v members=%d handoff=%v pull=%v",
		sc.seed, sc.regions, sc.escrow, sc.reserve, time.Duration(sc.delay), sc.loss, sc.cuts, sc.pattern, sc.limits, sc.skew,
		sc.restart, time.Duration(sc.restartAt), sc.oneAtATime, sc.maxRemote, sc.room, sc.cluster, sc.members, time.Duration(sc.handoff), sc.pull)
}

// simLinks is when each link (from, to) took its exchange in flight, or -1
// while it is free; a link whose batch or acknowledgement was lost frees
// after simLinkTimeout, as the server's exchange times out.
type simLinks [][]int64

const simLinkTimeout = int64(time.Second)

func newSimLinks(r int) simLinks {
	l := make(simLinks, r)
	for i := range l {
		l[i] = make([]int64, r)
		for j := range l[i] {
			l[i][j] = -1
		}
	}
	return l
}

// ready returns which of from's links can take a batch at now.
func (l simLinks) ready(from int, now int64) []bool {
	out := make([]bool, len(l))
	for p, since := range l[from] {
		out[p] = since < 0 || now-since >= simLinkTimeout
	}
	return out
}

// cut reports whether a message from a to b is lost to a partition at t.
func (sc simSchedule) cut(a, b int, t int64) bool {
	for _, c := range sc.cuts {
		if t >= c.from && t < c.to && (c.region < 0 || c.region == a || c.region == b) {
			return true
		}
	}
	return false
}

// hot reports how busy region r is at t: the chance it sends a request in a tick.
func (sc simSchedule) hot(r int, t int64) float64 {
	switch sc.pattern {
	case 0:
		if r == 0 {
			return 0.9
		}
		return 0.05
	case 1:
		return 0.8
	case 2:
		if int(t/int64(3*time.Second))%sc.regions == r {
			return 0.9
		}
		return 0.02
	}
	if (t/int64(700*time.Millisecond)+int64(r))%4 == 0 {
		return 1
	}
	return 0.01
}

type simResult struct {
	worst    float64 // the largest total/L of any window
	ofBound  float64 // the largest total/Bound of any window
	worstBig float64 // the largest total/L of a window whose α·L/R ≥ 1
	windows  int
	used     float64 // mean total/L over windows with traffic
	refused  int64   // received entries refused past MaxRemote, in all regions
	// withMoves is the largest total/Bound of any window of a clustered
	// schedule, its key's slot moved near it or not.
	withMoves float64
}

type simTruth struct {
	lim    Limit
	counts counts // all regions' units by bucket
}

// simWindows walks the windows of each key's truth that have closed,
// each once: a window is measured a second (the skew) after its end, or
// at once when all is set, and counted in the result's worst, windows
// and used before its scenario's own check sees it.
type simWindows struct {
	truth   []simTruth
	res     *simResult
	checked []int64 // per key, the last bucket whose window was measured
}

func newSimWindows(truth []simTruth, res *simResult) *simWindows {
	w := &simWindows{truth: truth, res: res, checked: make([]int64, len(truth))}
	for i := range w.checked {
		w.checked[i] = -1
	}
	return w
}

func (w *simWindows) closed(now int64, all bool, check func(tr *simTruth, id, end, total int64, ratio float64)) {
	for i := range w.truth {
		tr := &w.truth[i]
		for _, b := range tr.counts {
			end := tr.lim.start(b.id + 1)
			if b.id <= w.checked[i] || !all && end+int64(time.Second) > now {
				continue
			}
			total := tr.counts.sum(tr.lim.firstOf(b.id), b.id)
			ratio := float64(total) / float64(tr.lim.Limit)
			w.res.worst = max(w.res.worst, ratio)
			w.res.windows++
			w.res.used += ratio
			check(tr, b.id, end, total, ratio)
			w.checked[i] = b.id
		}
	}
}

// runSchedule runs one schedule and returns the worst ratio; it fails t on
// any window over the bound.
func runSchedule(t testing.TB, sc simSchedule) simResult {
	rng := rand.New(rand.NewPCG(sc.seed, 0xfeed))
	stores := make([]*Store, sc.regions)
	newStore := func(r int, epoch int64) *Store {
		cfg := Defaults(r, sc.regions)
		cfg.Escrow, cfg.Reserve, cfg.Epoch, cfg.MaxRemote = sc.escrow, sc.reserve, epoch, sc.maxRemote
		st, err := New(cfg)
		require.NoError(t, err)
		if sc.room > 0 {
			st.SetRoom(func(n int64) bool { return n <= sc.room })
		}
		return st
	}
	for r := range stores {
		stores[r] = newStore(r, 0)
	}
	cfg := stores[0].Config()
	truth := make([]simTruth, len(sc.limits))
	for i, l := range sc.limits {
		truth[i].lim = l
	}
	base := int64(1_800_000_000) * int64(time.Second)
	var flight []simMsg
	links := newSimLinks(sc.regions)
	send := func(m simMsg, now int64) {
		if now < sc.duration && (sc.cut(m.from, m.to, now) || rng.Float64() < sc.loss) {
			return
		}
		m.at = now + rng.Int64N(sc.delay+1)
		flight = append(flight, m)
	}
	var res simResult
	windows := newSimWindows(truth, &res)
	check := func(now int64, all bool) {
		windows.closed(now, all, func(tr *simTruth, id, _, total int64, ratio float64) {
			res.ofBound = max(res.ofBound, float64(total)/float64(cfg.Bound(tr.lim.Limit)))
			big := sc.escrow*float64(tr.lim.Limit)/float64(sc.regions) >= 1
			if big {
				res.worstBig = max(res.worstBig, ratio)
			}
			bound, most := cfg.Bound(tr.lim.Limit), 1+sc.escrow
			if sc.restart >= 0 { // what no other region had received is lost: at most max(e, φ)
				e, phi := cfg.Budgets(tr.lim.Limit)
				bound += max(e, phi)
				most += float64(max(e, phi)) / float64(tr.lim.Limit)
			}
			if total > bound || big && ratio > most {
				t.Fatalf("%v\nwindow ending %d of %v: %d admitted, bound %d (ratio %.3f)",
					sc, id, tr.lim, total, bound, ratio)
			}
		})
	}
	end := sc.duration + int64(8*time.Second) // then quiet and healed, so every window is measured
	for now := int64(0); now < end; now += int64(simTick) {
		busy, healed := now < sc.duration, now >= sc.duration
		var keep, acks []simMsg
		for _, m := range flight {
			switch {
			case m.at > now:
				keep = append(keep, m)
			case !healed && sc.cut(m.from, m.to, now):
			case m.batch != nil:
				if a := stores[m.to].Receive(m.batch, base+now+sc.skew[m.to]); a != nil {
					acks = append(acks, simMsg{from: m.to, to: m.from, ack: a})
				}
			default:
				stores[m.to].Acked(m.ack, base+now+sc.skew[m.to])
				links[m.to][m.from] = -1
			}
		}
		flight = keep
		if now == sc.restartAt/int64(simTick)*int64(simTick) && sc.restart >= 0 {
			stores[sc.restart] = newStore(sc.restart, base+now+sc.skew[sc.restart])
		}
		for _, m := range acks {
			send(m, now)
		}
		for r, st := range stores {
			clock := base + now + sc.skew[r]
			if busy {
				for i := range truth {
					if rng.Float64() >= sc.hot(r, now) {
						continue
					}
					l := truth[i].lim
					cost := 1 + rng.Int64N(max(1, l.Limit/40))
					if d := st.Decide([]byte(fmt.Sprint("k", i)), l, clock, cost, false); d.Allowed {
						cur, _ := l.span(clock)
						truth[i].counts.add(cur, cost)
					}
				}
			}
			if (now/int64(simTick))%10 == int64(r)%10 || st.Urgent() {
				var ready []bool
				if sc.oneAtATime {
					ready = links.ready(r, now)
				}
				for p, b := range st.SyncReady(clock, ready) {
					if b != nil {
						links[r][p] = now
						send(simMsg{from: r, to: p, batch: b}, now)
					}
				}
				st.Sweep(clock, 100)
			}
		}
		check(now, false)
	}
	check(end, true)
	if res.windows > 0 {
		res.used /= float64(res.windows)
	}
	for _, st := range stores {
		s := st.Stats(0)
		res.refused += s.KeysRefused
		require.LessOrEqual(t, s.RemoteKeys, max(sc.maxRemote, 2), "%v\nkeys held only for others", sc)
	}
	// A restart loses the region's measurements, and units no one
	// received; a region that refused a key never measures its windows.
	if sc.restart < 0 && sc.maxRemote == 0 && sc.room == 0 {
		verifyMeasured(t, sc, stores, truth)
	}
	return res
}

// verifyMeasured checks that each region measured every window, as the truth has it.
func verifyMeasured(t testing.TB, sc simSchedule, stores []*Store, truth []simTruth) {
	var windows, overWindows, overUnits int64
	for _, tr := range truth {
		for _, b := range tr.counts {
			total := tr.counts.sum(tr.lim.firstOf(b.id), b.id)
			windows++
			if total > tr.lim.Limit {
				overWindows++
				overUnits += total - tr.lim.Limit
			}
		}
	}
	for r, st := range stores {
		s := st.Stats(0)
		got := [3]int64{s.WindowsMeasured + s.WindowsUnmeasured, s.OvershootWindows, s.OvershootUnits}
		require.Equal(t, [3]int64{windows, overWindows, overUnits}, got, "%v\nregion %d's measurement (windows, with overshoot, units)", sc, r)
	}
}

// TestSimulationBound runs thousands of random schedules (RL_SIM_SCHEDULES,
// default 2000; 200 with -short or -race) and the seeds in testdata/sim_seeds.
func TestSimulationBound(t *testing.T) {
	n := 2000
	if testing.Short() || underRace {
		n = 200
	}
	if v, err := strconv.Atoi(os.Getenv("RL_SIM_SCHEDULES")); err == nil {
		n = v
	}
	seeds := readSeeds(t)
	for i := range n {
		seeds = append(seeds, uint64(i))
	}
	for i := range n / 4 {
		seeds = append(seeds, clusterSeeds+uint64(i))
	}
	var worst simResult
	worstSeed, ofBound := uint64(0), 0.0
	byEscrow := map[float64]float64{}
	restarts := 0.0 // the largest total/Bound where a region restarted (Bound, not Bound + max(e, φ))
	var refused, capped, cappedWorst = int64(0), 0, 0.0
	var roomRefused, roomed, roomWorst = int64(0), 0, 0.0
	var clustered, clusterWorst = 0, 0.0
	var pulled, pullWorst, notPulled, notPullWorst = 0, 0.0, 0, 0.0 // clustered schedules without a restart whose moves take the old owner's units, or not: total/bound of every window, moves or not
	for _, seed := range seeds {
		sc := newSchedule(seed)
		var res simResult
		ok := t.Run("", func(t *testing.T) {
			if sc.cluster {
				res = runClusterSchedule(t, sc)
			} else {
				res = runSchedule(t, sc)
			}
		})
		if !ok {
			t.Logf("add to region/testdata/sim_seeds: %d", seed)
			return
		}
		if sc.restart < 0 {
			byEscrow[sc.escrow] = max(byEscrow[sc.escrow], res.worstBig)
			ofBound = max(ofBound, res.ofBound)
		} else {
			restarts = max(restarts, res.ofBound)
		}
		if res.worst > worst.worst {
			worst, worstSeed = res, seed
		}
		if sc.maxRemote > 0 {
			refused, capped = refused+res.refused, capped+1
			if sc.restart < 0 {
				cappedWorst = max(cappedWorst, res.ofBound)
			}
		}
		if sc.cluster {
			clustered++
			if sc.restart < 0 {
				clusterWorst = max(clusterWorst, res.ofBound)
			}
			switch {
			case sc.restart >= 0:
			case sc.pull:
				pulled, pullWorst = pulled+1, max(pullWorst, res.withMoves)
			default:
				notPulled, notPullWorst = notPulled+1, max(notPullWorst, res.withMoves)
			}
		}
		if sc.room > 0 {
			roomRefused, roomed = roomRefused+res.refused, roomed+1
			if sc.restart < 0 {
				roomWorst = max(roomWorst, res.ofBound)
			}
		}
	}
	if roomed > 10 {
		require.Positive(t, roomRefused, "%d schedules with a room of %d bytes refused no entry: the room was not exercised", roomed, newSchedule(5).room)
	}
	t.Logf("%d schedules with a clustered region (slot owners deciding, slots moving): worst total/bound %.4f without a restart", clustered, clusterWorst)
	t.Logf("of them without a restart, worst total/bound of every window, moves or not: %.4f in %d whose moves take the old owner's units (pull), %.4f in %d whose moves do not (their bound adds max(e, φ) a move)",
		pullWorst, pulled, notPullWorst, notPulled)
	t.Logf("%d schedules with a room of %d bytes: %d entries refused, worst total/bound %.4f without a restart", roomed, newSchedule(5).room, roomRefused, roomWorst)
	if capped > 10 {
		require.Positive(t, refused, "%d schedules with max-remote 1 refused no entry: the cap was not exercised", capped)
	}
	t.Logf("%d schedules with max-remote 1: %d entries refused, worst total/bound %.4f without a restart", capped, refused, cappedWorst)
	t.Logf("%d schedules: worst total/L %.4f (%v); worst total/bound %.4f", len(seeds), worst.worst, newSchedule(worstSeed), ofBound)
	t.Logf("no restart: worst total/L by α, limits with α·L/R ≥ 1: %v", byEscrow)
	t.Logf("with a restart: worst total/Bound %.4f (allowed: 1 + max(e, φ)/Bound)", restarts)
}

func readSeeds(t *testing.T) []uint64 {
	f, err := os.Open("testdata/sim_seeds")
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	defer f.Close()
	var out []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseUint(strings.Fields(line)[0], 10, 64)
		require.NoError(t, err, "testdata/sim_seeds: %q", line)
		out = append(out, v)
	}
	return out
}
