package region

import (
	"errors"
	"math"
	"time"

	"github.com/rlstore/rlstore/window"
)

// Config is one region's view of the deployment. Every default is in
// Defaults.
type Config struct {
	Self    int           // this region's index, 0 … Regions-1
	Regions int           // R, the number of regions sharing each limit
	Escrow  float64       // α: a region's unacknowledged admissions stay within α·L/R
	Reserve float64       // β: a region may admit up to β·L/R of a window without acknowledgements; 0 denies instead
	MaxSkew time.Duration // the assumed bound on clock skew between any two regions
	Retry   time.Duration // resend counts a peer has not acknowledged after this long
	Hold    time.Duration // keep counts not yet measured (or acknowledged) this long past their window
	Sync    time.Duration // the sync interval: only a hint for a denied request's wait
	// Epoch is when this store started (unix nanoseconds): a region that
	// restarts has a new one, which tells the others to send back what
	// they counted of it (see Recovering).
	Epoch int64
	// Member names this store's node in a clustered region ("" for a
	// region of one node): its batches carry it, and the other regions
	// keep its epoch apart from its region's other nodes'.
	Member string
	// MaxRemote bounds the keys the table holds only for other regions
	// (it admitted none of them); 0 is no bound. Past it a received entry
	// for a new key is refused (cap.go).
	MaxRemote int
	// Slot, if set, returns a key's cluster slot: a node of a clustered
	// region that gains slots (Gain) names them in its batches, and the
	// other regions then resend and echo only those slots' keys, not every
	// key (nil: a gain is a restart of the whole region to them).
	Slot func(key string) int
}

// Defaults returns the defaults: α 0.1, β 0.5, 1 s of skew, retry after
// 1 s, hold 2 min, sync every 100 ms.
func Defaults(self, regions int) Config {
	return Config{Self: self, Regions: regions, Escrow: 0.1, Reserve: 0.5,
		MaxSkew: time.Second, Retry: time.Second, Hold: 2 * time.Minute, Sync: 100 * time.Millisecond}
}

// Sentinel errors of New.
var (
	ErrConfig = errors.New("region: invalid configuration")
)

// Validate reports whether c can be honoured.
func (c Config) Validate() error {
	switch {
	case c.Regions < 1 || c.Regions > MaxRegions || c.Self < 0 || c.Self >= c.Regions:
		return errors.Join(ErrConfig, errors.New("region: self must name one of 1-64 regions"))
	case !(c.Escrow > 0 && c.Escrow <= 1):
		return errors.Join(ErrConfig, errors.New("region: escrow must be in (0, 1]"))
	case !(c.Reserve >= 0 && c.Reserve <= 1):
		return errors.Join(ErrConfig, errors.New("region: reserve must be in [0, 1]"))
	case c.MaxRemote < 0:
		return errors.Join(ErrConfig, errors.New("region: max remote keys must not be negative"))
	case c.MaxSkew < 0 || c.Retry <= 0 || c.Hold < 0 || c.Sync <= 0:
		return errors.Join(ErrConfig, errors.New("region: durations must be positive"))
	}
	return nil
}

// MaxRegions bounds R.
const MaxRegions = 64

// Mode says how a decision went.
type Mode uint8

// The modes of a decision.
const (
	Escrowed         Mode = iota + 1 // admitted; within the escrow of unacknowledged units
	Reserved                         // admitted from the region's reserve (acknowledgements are late)
	DeniedLimit                      // denied: the view (with reserves) has no room
	DeniedEscrow                     // denied: room in the view, but escrow and reserve are spent
	DeniedRecovering                 // denied: restarted, this region does not yet know what it admitted before
)

// Decision is a global key's decision: the window's answer, how it went,
// and the units the region counted in the window (its own and the others').
type Decision struct {
	window.Decision
	Mode   Mode
	Own    int64 // this region's units in the window
	Others int64 // the other regions' units in the window, as last received
	Made   bool  // the key had no state here before this decision
}

// Budgets returns a key's escrow e (at least 1, so that a region can
// admit at all) and reserve φ for limit L.
func (c Config) Budgets(l int64) (e, phi int64) {
	r := float64(c.Regions)
	e = max(1, int64(math.Floor(c.Escrow*float64(l)/r)))
	phi = int64(math.Floor(c.Reserve * float64(l) / r))
	return e, phi
}

// Bound returns the most units all regions together can admit in one
// window of limit L: L + (R−1)·e. It is at most (1+α)·L when α·L/R ≥ 1.
func (c Config) Bound(l int64) int64 {
	e, _ := c.Budgets(l)
	return l + int64(c.Regions-1)*e
}

// key is one global key's state in this region.
type key struct {
	name     string // the key, as the maps hold it
	lim      Limit
	stamp    int64    // the latest time a decision charged at: a clock that steps back is clamped
	own      counts   // units this region admitted
	seen     []counts // by region: the units it admitted, as last received
	acked    []counts // by region: this region's units it acknowledged
	sent     []counts // by region: this region's units last sent to it
	measured int64    // the last bucket whose window was measured, or -1
	remote   bool     // one of the keys held only for other regions (cap.go)
	// marked is the Store's gen when a charge last marked the key changed
	// (changed): until a call other than Decide, which alone take keys out
	// of those sets, another charge need not mark it again.
	marked uint64
	bytes  int64 // its part of Store.bytes (bytes.go)
}

// Store is one region's state of its global keys: what it admitted, what
// it received from every other region and what they acknowledged. Decide
// decides locally; Sync, Receive and Acked are the exchange, which the
// caller carries between regions. Every method takes the time as unix
// nanoseconds. A Store is not safe for concurrent use.
type Store struct {
	cfg     Config
	keys    map[string]*key
	dirty   map[string]struct{} // keys whose own units changed since the last Sync
	measure map[string]struct{} // keys with windows not yet measured
	mirror  map[string]struct{} // keys whose own units changed since the last DrainOwn
	peers   []peer              // by region; this region's entry is unused
	stats   Stats
	scratch counts
	urgent  bool   // some key's unacknowledged units passed half its escrow since the last Sync
	gen     uint64 // moves on in every call but Decide: only they take keys out of dirty, measure, mirror or a peer's unacked (key.marked)
	echoed  int    // how many other regions have sent back what they counted of this one
	remote  int    // keys with remote set: held only for other regions (cap.go)
	bytes   int64  // about what the keys hold (bytes.go)
	room    func(n int64) bool
	// fresh, after a Gain, reports the keys that wait for the echoes
	// (nil: every key, as after a start); gainView is the view of the gain.
	fresh    func(key string) bool
	gainView uint64
	// gained are the slots the gains since this store last recovered took
	// (ascending), which its batches name (Batch.Gained) to the regions
	// that have echoed its start (peer.whole); the others must take its
	// new epoch as a restart of everything.
	gained []int
}

// New returns an empty Store for region cfg.Self.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, keys: map[string]*key{}, dirty: map[string]struct{}{},
		measure: map[string]struct{}{}, mirror: map[string]struct{}{}, peers: make([]peer, cfg.Regions), gen: 1}
	for i := range s.peers {
		s.peers[i].unacked = map[string]struct{}{}
		s.peers[i].whole = true
	}
	return s, nil
}

// Config returns the store's configuration.
func (s *Store) Config() Config { return s.cfg }

// Keys returns the number of global keys held.
func (s *Store) Keys() int { return len(s.keys) }

func (s *Store) newKey(lim Limit) *key {
	r := s.cfg.Regions
	return &key{lim: lim, seen: make([]counts, r), acked: make([]counts, r), sent: make([]counts, r), measured: -1}
}

// lookup returns key name's state under lim, making it if mk is set.
// Counts kept under other buckets are dropped.
func (s *Store) lookup(name []byte, lim Limit, mk bool) *key {
	k, _ := s.lookupMade(name, lim, mk)
	return k
}

// lookupMade is lookup, and reports whether it made the key.
func (s *Store) lookupMade(name []byte, lim Limit, mk bool) (*key, bool) {
	k := s.keys[string(name)]
	switch {
	case k == nil && !mk:
		return nil, false
	case k == nil:
		k = s.newKey(lim)
		k.name = string(name)
		s.keys[k.name] = k
		k.lim = lim
		s.resize(k)
		return k, true
	case !k.lim.sameBuckets(lim):
		name, remote, bytes := k.name, k.remote, k.bytes
		*k = *s.newKey(lim)
		k.name, k.remote, k.bytes = name, remote, bytes
		s.resize(k)
	}
	k.lim = lim
	return k, false
}

// Decide decides a request of cost units on global key name under lim at
// now. It admits when (1) the region's own units, plus each other
// region's units as last received or its reserve φ if that is more, plus
// cost fit in L; and (2) either its own units no other region has yet
// acknowledged, plus cost, stay within the escrow e, or its own units in
// the window, plus cost, stay within φ. Unless denied or peek, it charges
// the key. Denied requests never consume.
func (s *Store) Decide(name []byte, lim Limit, now, cost int64, peek bool) Decision {
	if s.Recovering(lim, now) && (s.fresh == nil || s.fresh(string(name))) { // before a key is made: a restarted region may deny every key for a window
		return Decision{Decision: window.Decision{Limit: lim.Limit, Wait: s.cfg.Sync}, Mode: DeniedRecovering}
	}
	k, made := s.lookupMade(name, lim, !peek)
	if k == nil {
		k = s.newKey(lim)
	}
	now = max(now, k.stamp)
	cur, lo := lim.span(now)
	e, phi := s.cfg.Budgets(lim.Limit)
	guard := lo - lim.skewBuckets(s.cfg.MaxSkew)
	d := Decision{Own: k.own.sum(lo, lim.viewHi(cur)), Made: made}
	held := d.Own
	for p := range s.peers {
		if p != s.cfg.Self {
			n := k.seen[p].sum(lo, lim.viewHi(cur))
			d.Others += n
			held += max(n, phi)
		}
	}
	fits := cost <= lim.Limit && held+cost <= lim.Limit
	unacked := s.unacked(k, guard)
	escrow := unacked+cost <= e
	reserve := k.own.sum(guard, math.MaxInt64)+cost <= phi
	d.Decision = window.Decision{Limit: lim.Limit, Allowed: fits && (escrow || reserve)}
	switch {
	case d.Allowed && escrow:
		d.Mode = Escrowed
	case d.Allowed:
		d.Mode = Reserved
	case fits:
		d.Mode = DeniedEscrow
	default:
		d.Mode = DeniedLimit
	}
	s.fill(&d, k, lim, now, cur, lo, held, cost)
	if d.Allowed && !peek {
		s.charge(k, now, cur, cost)
		d.Own += cost
		s.urgent = s.urgent || 2*(unacked+cost) >= e
	}
	return d
}

// Recovering reports whether a decision under lim at now must wait: the
// store started (Config.Epoch) less than a window and the skew ago, and
// not every other region has yet sent back what it counted of this one.
// Until then its own past admissions in the window may be unknown to it.
func (s *Store) Recovering(lim Limit, now int64) bool {
	return s.echoed < s.cfg.Regions-1 && now < s.cfg.Epoch+int64(lim.Window)+lim.width()+int64(s.cfg.MaxSkew)
}

// Urgent reports whether some key has used half its escrow since the last
// Sync: syncing now, rather than at the next interval, brings the
// acknowledgements that let it admit more.
func (s *Store) Urgent() bool { return s.urgent }

// charge adds cost admitted units to k in bucket cur.
func (s *Store) charge(k *key, now, cur, cost int64) {
	name := k.name
	k.stamp = now
	k.own.add(cur, cost)
	s.resize(k)
	s.owned(k)
	if k.marked != s.gen {
		s.changed(name)
		k.marked = s.gen
	}
	s.stats.Admitted += cost
}

// unacked returns k's own units from bucket guard on that some other
// region has not acknowledged.
func (s *Store) unacked(k *key, guard int64) int64 {
	var u int64
	for i := len(k.own) - 1; i >= 0 && k.own[i].id >= guard; i-- {
		b := k.own[i]
		low := b.n
		for p := range s.peers {
			if p != s.cfg.Self {
				low = min(low, k.acked[p].get(b.id))
			}
		}
		u += b.n - low
	}
	return u
}
