package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/server/internal/glob"
	"github.com/rlstore/rlstore/window"
)

// RegionConfig makes the server one region of several that share global
// limits, each deciding locally (docs/regions.md). cmd/rlstore builds it
// from the --region flags.
type RegionConfig struct {
	Name  string       // this region's name (--region)
	Peers []RegionPeer // every other region (--region-peers)
	// Sync is the time between exchanges. Default DefaultRegionSync.
	Sync time.Duration
	// Escrow is α, Reserve β and MaxSkew K of region.Config; zero values
	// take region.Defaults'. Deny sets the reserve to 0 (--region-partition deny).
	Escrow, Reserve float64
	Deny            bool
	MaxSkew         time.Duration
	// Local are glob patterns of keys decided per region, not globally (--region-local).
	Local []string
	// Secret and OldSecrets are the node-to-node secrets, as a cluster's:
	// regions prove them to each other in the peer handshake. Required.
	Secret     []byte
	OldSecrets [][]byte
	// Forwarder carries the batches: cluster.Peers, authenticated and
	// persistent. Required.
	Forwarder cluster.Forwarder
	// Timeout bounds one exchange. Default DefaultRegionTimeout.
	Timeout time.Duration
	// MaxKeys bounds the global keys held only for other regions (this
	// region admitted none of them), which --max-keys does not count
	// (--region-max-keys). Default DefaultRegionMaxKeys; negative: no bound.
	MaxKeys int
	// TLS: the Forwarder dials other regions over TLS (--tls-cluster yes),
	// and this region refuses batches that come over a plain connection.
	TLS bool
}

// RegionPeer is another region: its name and the RESP address of a node of it.
type RegionPeer struct{ Name, Addr string }

// The defaults of RegionConfig.
const (
	DefaultRegionSync    = 100 * time.Millisecond
	DefaultRegionTimeout = time.Second
	DefaultRegionMaxKeys = 1_000_000
)

// regionNode is the server's side of the regions: the model (region.Store)
// under one lock, the loop that syncs every interval, and a link per other
// region that carries its batches.
type regionNode struct {
	s     *Server
	cfg   RegionConfig
	rc    region.Config
	index map[string]int // region name → the model's index
	names []string       // by index
	keys  [][]byte       // the peer keys a handshake may prove
	local [][]byte

	mu  sync.Mutex // guards st and own
	st  *region.Store
	own []region.Own // mirrorLocked's buffer

	synced       atomic.Int64 // syncs done
	mirrorFailed atomic.Int64 // own units the key store had no room to copy (region_keys.go)

	wake    chan struct{}
	ready   []bool          // syncOnce's scratch, by link index
	batches []*region.Batch // syncOnce's scratch: the batches of the last sync, handed to the links
	links   []*regionLink   // by index; nil at Self

	received, receivedBytes, refused atomic.Int64
	lastRefusal                      atomic.Pointer[string]
}

// regionLink carries batches to one other region, one at a time.
type regionLink struct {
	name, addr string
	out        chan *region.Batch
	sent       atomic.Int64 // batches acknowledged
	sentBytes  atomic.Int64
	fails      atomic.Int64
	dropped    atomic.Int64  // syncs that passed the link by: it was busy (its next batch carries what changed)
	wire       atomic.Uint32 // the wire version its region speaks, if older than ours (region_wire.go); 0: ours
	busy       atomic.Bool   // a batch is on its way or in an exchange: syncOnce makes none for it
	passed     atomic.Bool   // a sync passed the link by: carry asks for one as soon as it is free
	up         atomic.Bool
	lastErr    atomic.Pointer[string]
	skewed     bool // its measured clock skew is past --region-max-skew (carry's only)
}

func newRegionNode(s *Server, cfg RegionConfig) (*regionNode, error) {
	if cfg.Name == "" || len(cfg.Peers) == 0 || len(cfg.Secret) == 0 || cfg.Forwarder == nil {
		return nil, errors.New("server: a region needs a name, peers, a cluster secret and a forwarder")
	}
	setDefault(&cfg.Sync, DefaultRegionSync)
	setDefault(&cfg.Timeout, DefaultRegionTimeout)
	names := []string{cfg.Name}
	for _, p := range cfg.Peers {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	if len(slices.Compact(slices.Clone(names))) != len(names) {
		return nil, fmt.Errorf("server: region names repeat: %s", strings.Join(names, ","))
	}
	rn := &regionNode{s: s, cfg: cfg, index: map[string]int{}, names: names, wake: make(chan struct{}, 1)}
	for i, n := range names {
		rn.index[n] = i
	}
	rc := region.Defaults(rn.index[cfg.Name], len(names))
	rc.Sync = cfg.Sync
	rc.Epoch = s.cfg.Clock().UnixNano() // a restart is a new epoch: the others send back what they counted of this region
	if cfg.Escrow != 0 {
		rc.Escrow = cfg.Escrow
	}
	if cfg.Reserve != 0 {
		rc.Reserve = cfg.Reserve
	}
	if cfg.Deny {
		rc.Reserve = 0
	}
	if cfg.MaxSkew != 0 {
		rc.MaxSkew = cfg.MaxSkew
	}
	rc.MaxRemote = regionMaxKeys(cfg.MaxKeys) // region_wire.go
	st, err := region.New(rc)
	if err != nil {
		return nil, err
	}
	rn.rc, rn.st = rc, st
	rn.keys = [][]byte{cluster.PeerKey(cfg.Secret)}
	for _, old := range cfg.OldSecrets {
		rn.keys = append(rn.keys, cluster.PeerKey(old))
	}
	for _, p := range cfg.Local {
		rn.local = append(rn.local, []byte(p))
	}
	rn.links = make([]*regionLink, len(names))
	for _, p := range cfg.Peers {
		rn.links[rn.index[p.Name]] = &regionLink{name: p.Name, addr: p.Addr, out: make(chan *region.Batch, 1)}
	}
	return rn, nil
}

// attachRegion sets up the regions, if configured, and starts their sync.
func (s *Server) attachRegion() error {
	if s.cfg.Region == nil {
		return nil
	}
	if s.cfg.Cluster != nil {
		return errors.New("server: --region with a cluster is not supported yet: a region is one node")
	}
	rn, err := newRegionNode(s, *s.cfg.Region)
	if err != nil {
		return err
	}
	s.reg = rn
	s.AddMetrics(rn.writeMetrics)
	return nil // startRegion (region_keys.go) starts the exchanges, once it has restored the keys
}

// start starts the sync loop and a carrier per link.
func (rn *regionNode) start() {
	go rn.run()
	for _, l := range rn.links {
		if l != nil {
			go rn.carry(l)
		}
	}
}

// peerKeys are the keys a peer handshake may prove: the cluster's, or the regions'.
func (s *Server) peerKeys() [][]byte {
	if s.cl != nil {
		return s.cl.keys
	}
	if s.reg != nil {
		return s.reg.keys
	}
	return nil
}

// global reports whether key is decided across regions: not matched by --region-local.
func (rn *regionNode) global(key []byte) bool {
	for _, p := range rn.local {
		if glob.Match(p, key) {
			return false
		}
	}
	return true
}

// errNotGlobal is the reply to an algorithm whose state is not a sum of counts.
func errNotGlobal(kind window.Kind) error {
	return argError("ERR algorithm " + strings.ToUpper(kind.String()) + " cannot be global; use SLIDE or FIXED, or mark the key LOCAL")
}

// decide decides a global key. ok is false for a request the regions leave
// to the local store: RL.CHECK of a policy that is not global.
func (rn *regionNode) decide(key []byte, r *request) (o outcome, ok bool, err error) {
	switch {
	case r.op == opCheck && !globalPolicy(r.policy):
		return o, false, nil
	case r.op == opCheck:
		o, o.shadowed, err = rn.check(key, r) // region_policy.go
		o.shadowed = o.shadowed && o.d.Allowed
		return o, true, err
	case r.op == opThrottle:
		return o, true, errNotGlobal(window.KindToken)
	case r.params.Kind != window.KindSlide && r.params.Kind != window.KindFixed:
		return o, true, errNotGlobal(r.params.Kind)
	case r.params.FirstHit:
		return o, true, errAnchorNotGlobal // anchor.go
	}
	lim := region.Limit{Kind: r.params.Kind, Limit: r.params.Limit, Window: r.params.Period}
	rn.mu.Lock()
	d := rn.st.Decide(key, lim, r.now, r.cost, r.peek)
	if d.Made {
		err = rn.keepFreshLocked(key, lim, d.Allowed, r.now) // region_keys.go
	}
	urgent := rn.st.Urgent()
	rn.mu.Unlock()
	if err != nil {
		return o, true, err
	}
	if urgent {
		rn.nudge()
	}
	return outcome{d: d.Decision}, true, nil
}

// run syncs every interval, and early (at most ten times an interval) when
// a key has used half its escrow, until the server stops.
func (rn *regionNode) run() {
	t := time.NewTicker(rn.cfg.Sync)
	defer t.Stop()
	last := time.Time{}
	for {
		select {
		case <-rn.s.done:
			return
		case <-t.C:
		case <-rn.wake:
			if wait := rn.cfg.Sync/10 - time.Since(last); wait > 0 {
				select {
				case <-rn.s.done:
					return
				case <-time.After(wait):
				}
			}
		}
		last = time.Now()
		rn.syncOnce()
	}
}

func (rn *regionNode) syncOnce() {
	now := rn.s.cfg.Clock().UnixNano()
	rn.ready = rn.ready[:0]
	for _, l := range rn.links {
		rn.ready = append(rn.ready, l != nil && !l.busy.Load())
	}
	rn.mu.Lock()
	bs := rn.st.AppendSync(rn.batches, now, rn.ready)
	rn.batches = bs
	rn.st.Sweep(now, 4096)
	rn.mirrorLocked(now)
	rn.mu.Unlock()
	rn.synced.Add(1)
	for i, b := range bs {
		if l := rn.links[i]; b != nil && l != nil {
			l.busy.Store(true) // carry clears it once the exchange is over
			l.out <- b         // never blocks: the link was not busy
		} else if l != nil {
			l.dropped.Add(1)
			l.passed.Store(true)
		}
	}
	clear(bs) // the links own the batches now
}
