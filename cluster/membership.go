package cluster

import (
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// Membership is this node's part in the gossip cluster. It keeps the
// current View, rebuilt on every membership event and swapped atomically,
// so that View is cheap to call on every request. Make it with New and end
// it with Close; its methods are safe for concurrent use.
type Membership struct {
	cfg Config
	mc  *memberlist.Config     // memberlist's config, for Start
	ml  *memberlist.Memberlist // nil until Start
	bq  *memberlist.TransmitLimitedQueue
	log *slog.Logger

	view    atomic.Pointer[View]
	changed chan struct{} // a buffer of 1: a pending rebuild
	syncReq chan chan struct{}
	stop    chan struct{}
	done    sync.WaitGroup

	mu      sync.Mutex                 // guards the fields below
	nodes   map[string]memberlist.Node // alive and suspect members as memberlist last told us (see members)
	leaving map[string]time.Time       // members that said they are leaving, when they said so
	gone    []Member                   // departures not yet in a view
	// pending are the members declared dead whose death no majority of
	// the known members has confirmed yet (see confirmDeaths): the table
	// still deals them their slots, which no one serves meanwhile.
	pending map[string]Member
	forms   map[string]int       // member → the newest form of the lease's messages it answered in (see lease_msg.go)
	since   map[string]time.Time // when each alive member was first seen
	joined  map[string]time.Time // when each member last appeared in nodes (see flap.go)
	epoch   uint64               // the last view's table epoch
	waiting bool                 // no other member seen yet, and not allowed to serve alone: see View.Waiting
	closed  bool

	refuted atomic.Int64 // departures deferDeparture held back that the member refuted
	lease   *Lease
	// live is ml once New has made it: memberlist delivers messages
	// before Create returns, and the lease's answers need it.
	live      atomic.Pointer[memberlist.Memberlist]
	leaseKick chan struct{} // a buffer of 1: a round of lease requests due now (the known set changed)
}

// New starts gossip on cfg.BindAddr and joins cfg.Seeds. Seeds that cannot
// be reached are not an error: the node starts alone and keeps trying them.
// It is Prepare then Start with cfg's State and OnChange.
func New(cfg Config) (*Membership, error) {
	m, err := Prepare(cfg)
	if err != nil {
		return nil, err
	}
	if err := m.Start(cfg.State, cfg.OnChange); err != nil {
		m.Kill()
		return nil, err
	}
	return m, nil
}

// Prepare makes a membership that has not started gossip: its View is
// this node alone (waiting, if it has members to meet), its Lease holds
// none, and what it Broadcasts waits for Start. cfg's State and OnChange
// are left for Start, so that their owner may be built on the prepared
// membership's View and Lease first.
func Prepare(cfg Config) (*Membership, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if cfg.Known == nil {
		cfg.Known = NewKnown(nil)
	}
	m := &Membership{cfg: cfg, log: cfg.Logger, changed: make(chan struct{}, 1), syncReq: make(chan chan struct{}), stop: make(chan struct{}),
		nodes: map[string]memberlist.Node{}, leaving: map[string]time.Time{}, since: map[string]time.Time{},
		joined: map[string]time.Time{}, pending: map[string]Member{}, forms: map[string]int{}, lease: NewLease(cfg.NodeName, cfg.Timing.Lease), leaseKick: make(chan struct{}, 1)}
	m.cfg.State, m.cfg.OnChange = nil, nil
	if cfg.Deaths != nil {
		m.lease.KeepDeaths(cfg.Deaths.Saved(), cfg.Deaths.Save)
	}
	if cfg.Processes != nil {
		if err := cfg.Processes.Add(m.lease.inc); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		m.lease.restored = cfg.Processes.Before()
	}
	m.waiting = !cfg.Bootstrap && len(cfg.Seeds)+len(cfg.Remembered) > 0
	mc, err := m.memberlistConfig()
	if err != nil {
		return nil, err
	}
	m.mc = mc
	m.bq = &memberlist.TransmitLimitedQueue{NumNodes: m.numMembers, RetransmitMult: mc.RetransmitMult}
	m.rebuild() // the view of one, before anyone asks
	return m, nil
}

// Start starts gossip on the config's BindAddr with state and onChange as
// the config's State and OnChange (either may be nil), and joins the
// seeds. Call it once, on a prepared membership.
func (m *Membership) Start(state StateSync, onChange func(View)) error {
	m.cfg.State, m.cfg.OnChange = state, onChange // before memberlist and the loops, which read them
	tr, err := newPacketTransport(m.mc.BindAddr, m.mc.BindPort, m.mc.Logger)
	if err != nil {
		return fmt.Errorf("cluster: gossip on %s: %w", m.cfg.BindAddr, err)
	}
	m.mc.Transport = tr
	if m.mc.BindPort == 0 { // as memberlist does with its own transport
		m.mc.BindPort, m.mc.AdvertisePort = tr.Port(), tr.Port()
	}
	ml, err := memberlist.Create(m.mc)
	if err != nil {
		_ = tr.Shutdown()
		return fmt.Errorf("cluster: gossip on %s: %w", m.cfg.BindAddr, err)
	}
	m.ml = ml
	m.live.Store(ml)
	m.cfg.Known.Add(m.cfg.NodeName, m.GossipAddr())
	m.rebuild() // the view with this node's member, before the loops start
	m.done.Add(3)
	go m.rebuildLoop()
	go m.rejoinLoop()
	go m.leaseLoop()
	if seeds := m.joinTargets(); len(seeds) > 0 {
		if _, err := m.ml.Join(seeds); err != nil {
			m.log.Warn("cluster: could not join the seeds yet; retrying", "seeds", seeds, "err", err)
		}
		m.sync() // the first view the server takes has the members just met
		m.unlessAlone(m.missingSeeds())
		m.awaitLease()
	}
	if v := m.View(); v.Waiting {
		m.log.Warn("cluster: no member answered yet; keyed commands get -CLUSTERDOWN until one does (--cluster-bootstrap yes serves alone)",
			"seeds", m.joinTargets())
	}
	return nil
}

// unlessAlone stops waiting to meet a member when there is none to
// meet: every seed is this node (a DNS name that lists only this node, as
// a one-pod StatefulSet's peers Service does) and no member is remembered.
// A seed that does not resolve counts as another node.
func (m *Membership) unlessAlone(missing []string) {
	if len(missing) > 0 {
		return
	}
	m.mu.Lock()
	was := m.waiting
	m.waiting = false
	m.mu.Unlock()
	if was {
		m.log.Info("cluster: every seed is this node itself and no member is remembered; serving as a new cluster")
		m.sync()
	}
}

// awaitLease waits, at most a term, for the members just met to grant
// this node its lease, so that a node restarted into its cluster does not
// answer its first clients -CLUSTERDOWN for want of a grant in flight.
func (m *Membership) awaitLease() {
	if m.View().Waiting {
		return
	}
	m.kickLease()
	for end := time.Now().Add(m.cfg.Timing.Lease); !m.lease.Valid() && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond) // a poll with a deadline: grants arrive on memberlist's goroutine
	}
}

// joinTargets are the seeds, and while this node waits to meet a member
// the remembered members too.
func (m *Membership) joinTargets() []string {
	out := slices.Clone(m.cfg.Seeds)
	m.mu.Lock()
	waiting := m.waiting
	m.mu.Unlock()
	if waiting {
		for _, r := range m.cfg.Remembered {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

func (m *Membership) memberlistConfig() (*memberlist.Config, error) {
	host, port, err := splitHostPort(m.cfg.BindAddr)
	if err != nil {
		return nil, fmt.Errorf("cluster: gossip address %q: %w", m.cfg.BindAddr, err)
	}
	mc := memberlist.DefaultLANConfig()
	mc.Name, mc.BindAddr, mc.BindPort = m.cfg.NodeName, host, port
	mc.AdvertiseAddr, mc.AdvertisePort = host, port
	if m.cfg.AdvertiseAddr != "" {
		if mc.AdvertiseAddr, mc.AdvertisePort, err = splitHostPort(m.cfg.AdvertiseAddr); err != nil {
			return nil, fmt.Errorf("cluster: advertise address %q: %w", m.cfg.AdvertiseAddr, err)
		}
	}
	t := m.cfg.Timing
	mc.ProbeInterval, mc.ProbeTimeout, mc.SuspicionMult = t.Probe, t.ProbeTimeout, t.Suspicion
	mc.SuspicionMaxTimeoutMult = max(t.SuspicionMax, 1)
	mc.GossipInterval, mc.PushPullInterval, mc.DeadNodeReclaimTime = t.Gossip, t.PushPull, t.Reclaim
	mc.TCPTimeout = max(time.Second, 4*t.ProbeTimeout)
	// memberlist compresses every packet with a fresh LZW writer, whose
	// tables it allocates and clears each time: with the lease's 30
	// packets a second per node of 3 (probes and gossip aside), an idle
	// node spent 5% of a core, half of it there and in the GC after it.
	// The packets are a few dozen bytes; receivers read both forms.
	mc.EnableCompression = false
	if len(m.cfg.Keys) > 0 {
		if mc.Keyring, err = memberlist.NewKeyring(m.cfg.Keys, m.cfg.Keys[0]); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	// Every node speaks delegate protocol 0; the highest it advertises
	// says which slot assignment it computes (see Node.PerSlot). memberlist
	// refuses a member whose current version another does not span, which
	// 0 never is.
	mc.DelegateProtocolVersion, mc.DelegateProtocolMin, mc.DelegateProtocolMax = 0, 0, tableProtocol
	if m.cfg.perSlotOnly {
		mc.DelegateProtocolMax = 0
	}
	mc.Delegate, mc.Events = delegate{m}, events{m}
	mc.Logger = log.New(logWriter{m.log}, "", 0)
	return mc, nil
}

// tableProtocol is the delegate protocol version a node advertises as its
// highest when it computes the chunked slot assignment; builds before it
// advertise 0. Append only: each new assignment takes the next version.
const tableProtocol = 1

// View returns the current membership view.
func (m *Membership) View() *View { return m.view.Load() }

// GossipAddr is the host:port this node gossips on, as peers see it; empty
// before Start, which binds it (and picks a port 0 asks for).
func (m *Membership) GossipAddr() string {
	ml := m.live.Load() // not m.ml: Start may be storing it on another goroutine
	if ml == nil {
		return ""
	}
	return ml.LocalNode().Address()
}

func (m *Membership) numMembers() int {
	if ml := m.live.Load(); ml != nil {
		return ml.NumMembers()
	}
	return 1 // prepared: only this node
}

// signal asks for a rebuild of the view.
func (m *Membership) signal() {
	select {
	case m.changed <- struct{}{}:
	default: // one is pending: it will see this change too
	}
}

func (m *Membership) rebuildLoop() {
	defer m.done.Done()
	for {
		select {
		case <-m.stop:
			return
		case <-m.changed:
			m.rebuildAndNotify()
		case done := <-m.syncReq:
			m.rebuildAndNotify()
			close(done)
		}
	}
}

func (m *Membership) rebuildAndNotify() {
	if v, changed := m.rebuild(); changed && m.cfg.OnChange != nil {
		m.cfg.OnChange(*v)
	}
}

// sync rebuilds the view now and returns once OnChange has seen it.
func (m *Membership) sync() {
	done := make(chan struct{})
	select {
	case m.syncReq <- done:
		<-done
	case <-m.stop:
	}
}

// rebuild makes a new view from memberlist's members. It reports false
// when neither the members nor their states changed.
func (m *Membership) rebuild() (*View, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	members := m.membersLocked()
	v := &View{Self: m.cfg.NodeName, Gone: m.gone}
	m.gone = nil
	var owners []Node
	for _, p := range m.pending {
		owners = append(owners, p.Node) // its slots are its own until its death is confirmed
	}
	for _, n := range members {
		mem := m.memberLocked(n)
		v.Members = append(v.Members, mem)
		if mem.State == StateAlive {
			owners = append(owners, mem.Node)
			m.waiting = m.waiting && mem.Name == m.cfg.NodeName
		}
	}
	v.Waiting = m.waiting
	slices.SortFunc(v.Members, func(a, b Member) int { return strings.Compare(a.Name, b.Name) })
	if old := m.view.Load(); old != nil && len(v.Gone) == 0 && old.Waiting == v.Waiting && sameMembers(old.Members, v.Members) {
		return old, false
	}
	if len(owners) == 0 { // only this node, and it is leaving: it still answers for nothing but itself
		owners = append(owners, Node{Name: m.cfg.NodeName, Addr: m.cfg.RESPAddr, TLSAddr: m.cfg.TLSAddr})
	}
	m.epoch++
	v.Table, _ = NewTable(m.epoch, owners) // names are unique in memberlist, and there is at least one
	m.view.Store(v)
	return v, true
}

func (m *Membership) memberLocked(n *memberlist.Node) Member {
	if _, ok := m.since[n.Name]; !ok {
		m.since[n.Name] = time.Now()
	}
	mem := Member{Node: nodeFromMeta(n.Name, n.Meta), Gossip: n.Address(),
		State: StateAlive, Since: m.since[n.Name]}
	mem.PerSlot = n.DMax < tableProtocol
	if at, ok := m.leaving[n.Name]; ok {
		mem.State, mem.Since = StateLeaving, at
	}
	return mem
}

func sameMembers(a, b []Member) bool {
	return slices.EqualFunc(a, b, func(x, y Member) bool {
		return x.Name == y.Name && x.Node == y.Node && x.State == y.State
	})
}

// members returns copies of the alive and suspect members. memberlist's
// own Members returns its nodes, which it updates under a lock of its own
// that we cannot take; the copies are made in its event callbacks, which
// it calls with that lock held.
func (m *Membership) members() []*memberlist.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.membersLocked()
}

func (m *Membership) membersLocked() []*memberlist.Node {
	out := make([]*memberlist.Node, 0, len(m.nodes))
	for _, n := range m.nodes {
		out = append(out, &n)
	}
	return out
}

// seen records a member that joined or changed, for members.
func (m *Membership) seen(n *memberlist.Node) {
	c := *n
	c.Addr, c.Meta = slices.Clone(n.Addr), slices.Clone(n.Meta)
	m.mu.Lock()
	delete(m.pending, n.Name) // back before its death was confirmed: it kept its slots
	if _, ok := m.nodes[n.Name]; !ok {
		m.joined[n.Name] = time.Now()
		defer m.kickLease() // it grants only once it has met this node too: ask again now
	}
	m.nodes[n.Name] = c
	m.mu.Unlock()
	if m.cfg.Known.Add(n.Name, n.Address()) {
		go m.sendKnown() // not on memberlist's goroutine: a large set goes over TCP
		m.kickLease()
	}
	m.signal()
}

// departed records a member that left or died, unless it may be a stale
// report about the process it replaced (see deferDeparture).
func (m *Membership) departed(n *memberlist.Node) {
	if m.deferDeparture(n) {
		return
	}
	m.departedNow(n)
}

// departedNow records a member that left or died.
func (m *Membership) departedNow(n *memberlist.Node) {
	m.mu.Lock()
	delete(m.nodes, n.Name)
	delete(m.joined, n.Name)
	_, said := m.leaving[n.Name]
	st := StateDead
	if said || n.State == memberlist.StateLeft {
		st = StateLeft
	}
	gone := Member{Node: nodeFromMeta(n.Name, n.Meta), Gossip: n.Address(), State: st, Since: time.Now()}
	if st == StateDead {
		m.pending[n.Name] = gone // its slots move once a majority confirms: see confirmDeaths
	} else {
		m.gone = append(m.gone, gone)
	}
	delete(m.leaving, n.Name)
	delete(m.since, n.Name)
	m.mu.Unlock()
	if st == StateDead {
		if err := m.lease.NoteDeath(n.Name); err != nil {
			m.log.Error("cluster: could not save a death in the data dir; this node does not fence the member, nor count toward confirming its death", "node", n.Name, "err", err)
		}
		m.log.Warn("cluster: member declared dead", "node", n.Name)
		m.confirmDeaths(nil)
	} else {
		m.log.Info("cluster: member left", "node", n.Name)
		if m.cfg.Known.Remove(n.Name) { // a graceful leave shrinks the known set; a death does not
			go m.sendKnown()
		}
	}
	m.signal()
}

// markLeaving records that name said it is leaving.
func (m *Membership) markLeaving(name string) {
	m.mu.Lock()
	if _, ok := m.leaving[name]; !ok {
		m.leaving[name] = time.Now()
	}
	m.mu.Unlock()
	m.signal()
}

// Leaving tells every member that this node is leaving, and waits until
// they have been told or timeout passes. From then on no node, this one
// included, counts it as an owner: the caller hands its slots over, then
// calls Close.
func (m *Membership) Leaving(timeout time.Duration) error {
	m.markLeaving(m.cfg.NodeName)
	msg := append([]byte{msgLeaving}, m.cfg.NodeName...)
	var errs []error
	deadline := time.Now().Add(timeout)
	for _, n := range m.members() {
		if n.Name == m.cfg.NodeName {
			continue
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("cluster: telling %s we leave: timed out", n.Name))
			continue
		}
		if err := m.ml.SendReliable(n, msg); err != nil {
			errs = append(errs, fmt.Errorf("cluster: telling %s we leave: %w", n.Name, err))
		}
	}
	m.sync()
	return errors.Join(errs...)
}

// Known is the known member set this membership keeps.
func (m *Membership) Known() *Known { return m.cfg.Known }

// Forget removes name from the known member set for good, as Redis's
// CLUSTER FORGET: an operator's word that a dead member will not come
// back, so that the quorum no longer counts it. A member seen alive again
// returns to the set. This node cannot forget itself.
func (m *Membership) Forget(name string) error {
	switch {
	case name == m.cfg.NodeName:
		return ErrForgetSelf
	case !m.cfg.Known.Has(name):
		return ErrUnknownNode
	}
	m.cfg.Known.Remove(name)
	m.sendKnown()
	m.confirmDeaths(nil) // the operator's word: a forgotten member's death needs no majority
	return nil
}

// confirmDeaths moves the members declared dead whose death a majority of
// the known members (names; nil for the known set now) confirms, or that
// are no longer known, from pending into the next view's Gone: the table
// then deals their slots to others, which serve them TakeoverWait later.
// A member only this node, or a minority, declared dead keeps its slots:
// a node on the minority side of a partition, or one whose failure
// detector alone lost a member, moves no slot (see docs/cluster.md,
// "Safety").
func (m *Membership) confirmDeaths(names []string) {
	if names == nil {
		for _, k := range m.cfg.Known.Members() {
			names = append(names, k.Name)
		}
	}
	m.mu.Lock()
	var moved []string
	for name, p := range m.pending {
		if slices.Contains(names, name) && !m.lease.Confirmed(name, names) {
			continue
		}
		delete(m.pending, name)
		p.Since = time.Now()
		m.gone = append(m.gone, p)
		moved = append(moved, name)
	}
	m.mu.Unlock()
	for _, name := range moved {
		m.log.Info("cluster: a majority of the known members confirms a death; the member's slots move", "node", name)
	}
	if len(moved) > 0 {
		m.signal()
	}
}

// Forget's errors; the server answers them in Redis's words.
var (
	ErrForgetSelf  = errors.New("cluster: a node cannot forget itself")
	ErrUnknownNode = errors.New("cluster: no such member")
)

// sendKnown sends the known set to every other member.
func (m *Membership) sendKnown() {
	m.send(msgKnown, AppendKnown(nil, m.cfg.Known.All()))
}

// Broadcast sends msg, opaque to this package, to every other member's
// StateSync.Merge. Small messages go by gossip, larger ones over TCP to
// each member; either way push/pull carries LocalState later to those who
// missed it.
func (m *Membership) Broadcast(msg []byte) { m.send(msgState, msg) }

// send sends a message of kind to every other member, as Broadcast says.
func (m *Membership) send(kind byte, msg []byte) {
	b := append([]byte{kind}, msg...)
	if len(b) <= 1000 {
		m.bq.QueueBroadcast(broadcast(b))
		return
	}
	for _, n := range m.members() {
		if n.Name != m.cfg.NodeName {
			if err := m.ml.SendReliable(n, b); err != nil {
				m.log.Warn("cluster: state not sent; push/pull will carry it", "node", n.Name, "err", err)
			}
		}
	}
}

// rejoinLoop joins the seeds again while any of them is not a member:
// memberlist never rejoins by itself, so after a partition heals the two
// sides would otherwise stay apart.
func (m *Membership) rejoinLoop() {
	defer m.done.Done()
	t := time.NewTicker(m.cfg.Timing.Rejoin)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			missing := m.missingSeeds()
			if len(missing) > 0 {
				_, _ = m.ml.Join(missing) // failures are retried at the next tick
			}
			m.unlessAlone(missing)
			m.sendKnown() // repairs what a lost message missed
		}
	}
}

// missingSeeds reads the current View, not memberlist's Members: those
// are memberlist's own nodes, which it updates without a lock we can take.
func (m *Membership) missingSeeds() []string {
	have := map[string]bool{}
	for _, n := range m.View().Members {
		have[n.Gossip] = true
	}
	var missing []string
	for _, s := range m.joinTargets() {
		missing = append(missing, missingAddrs(s, have, net.DefaultResolver.LookupIP)...)
	}
	return missing
}

// Close leaves the cluster gracefully (peers see a leave, not a death)
// and stops gossip. It waits at most timeout for the leave to spread.
func (m *Membership) Close(timeout time.Duration) error {
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.mu.Unlock()
	if closed {
		return nil
	}
	if m.ml == nil { // prepared, never started
		close(m.stop)
		return nil
	}
	err := m.ml.Leave(timeout)
	close(m.stop)
	m.done.Wait()
	return errors.Join(err, m.ml.Shutdown())
}

// Kill stops gossip without leaving, as a crash would; for tests.
func (m *Membership) Kill() {
	m.mu.Lock()
	closed := m.closed
	m.closed = true
	m.mu.Unlock()
	if !closed {
		close(m.stop)
		m.done.Wait()
		if m.ml != nil {
			_ = m.ml.Shutdown()
		}
	}
}

// logWriter turns memberlist's log lines into debug records: its warnings
// are routine (a probe lost, a suspect refuted) and this package logs the
// events that matter itself.
type logWriter struct{ log *slog.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Debug("memberlist: " + strings.TrimSpace(string(p)))
	return len(p), nil
}

var _ io.Writer = logWriter{}
