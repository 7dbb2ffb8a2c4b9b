package server

import (
	"crypto/tls"
	"errors"
	"strings"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/global"
	"github.com/rlstore/rlstore/server/internal/handoff"
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

// ErrRegionNodeName refuses a region name of the form that made each node
// of a clustered region a decider of its own.
const ErrRegionNodeName = "--region names the region, not a node: every node of a clustered region takes the same name (eu, not eu/p0), " +
	"and --region-peers names only the other regions (docs/regions.md, \"A region made of a cluster\")"

// The defaults of RegionConfig.
const (
	DefaultRegionSync    = 100 * time.Millisecond
	DefaultRegionTimeout = time.Second
	DefaultRegionMaxKeys = 1_000_000
)

// attachRegion sets up the regions (server/internal/global), if configured.
// A region made of a cluster (docs/regions.md) is one decider per key:
// every node takes the same region name and decides the global keys of
// the slots it serves, as the pipeline routes every other key to its
// owner before the decision seam; its gateway carries the exchanges.
func (s *Server) attachRegion() error {
	if s.cfg.Region == nil {
		return nil
	}
	gc, err := globalConfig(*s.cfg.Region)
	if err != nil {
		return err
	}
	gc.Store, gc.Log = s.cfg.Store, s.log
	if s.ho != nil {
		gc.Cluster = regionCluster{s}
	}
	rn, err := global.New(gc, regionDelegate{s})
	if err != nil {
		return err
	}
	s.reg = rn
	if s.ho != nil {
		s.ho.OnTableChange(s.regionTable)
		s.regionTable(nil, s.ho.View())
	}
	s.AddMetrics(rn.WriteMetrics)
	return nil // startRegion starts the exchanges, once it has restored the keys
}

// regionTable tells the regions' node which slots this node owns in a
// new view: a table-change hook.
func (s *Server) regionTable(_, nv *cluster.View) {
	if nv.Table == nil {
		return
	}
	s.reg.OnTable(func(slot int) bool { return nv.Table.Owner(slot).Name == nv.Self }, func(slot int) bool {
		st := s.ho.State(slot) // the handoff's hook ran first: a migration out is in its copy phase
		return st != nil && (st.Mode() == handoff.ModeCopying || st.Mode() == handoff.ModeGated)
	})
}

// regionCluster is the cluster as the regions' node sees it (global.Cluster).
type regionCluster struct{ s *Server }

func (c regionCluster) Topology() global.Topology {
	v := c.s.ho.View()
	t := global.Topology{Self: v.Self}
	if v.Table != nil {
		t.View = v.Table.Epoch()
	}
	for _, m := range v.Members { // sorted by name
		if m.State == cluster.StateAlive {
			addr := m.Addr
			if c.s.cfg.Region.TLS && m.TLSAddr != "" {
				addr = m.TLSAddr
			}
			t.Names, t.Addrs = append(t.Names, m.Name), append(t.Addrs, addr)
		}
	}
	t.Owner = func(key []byte) int {
		if v.Table == nil {
			return -1
		}
		o := v.Table.Owner(cluster.Slot(policy.Route(key))).Name
		for i, n := range t.Names {
			if n == o {
				return i
			}
		}
		return -1
	}
	return t
}

// Deciding returns whether this node decides a slot's keys, by the view
// and the handoff's state now: the regions' node refuses the other
// regions' entries of the others (server/internal/global/handoff.go).
func (c regionCluster) Deciding() func(slot int) bool {
	v := c.s.ho.View()
	return func(slot int) bool {
		if st := c.s.ho.State(slot); st != nil {
			m := st.Mode()
			return m == handoff.ModeCopying || m == handoff.ModeGated || m == handoff.ModeAdopted
		}
		return v.Table != nil && v.Table.Owner(slot).Name == v.Self
	}
}

// globalConfig is cfg with its defaults taken, as the regions' node takes it.
func globalConfig(cfg RegionConfig) (global.Config, error) {
	if cfg.Name == "" || len(cfg.Peers) == 0 || len(cfg.Secret) == 0 || cfg.Forwarder == nil {
		return global.Config{}, errors.New("server: a region needs a name, peers, a cluster secret and a forwarder")
	}
	if strings.Contains(cfg.Name, "/") {
		return global.Config{}, errors.New(ErrRegionNodeName)
	}
	setDefault(&cfg.Sync, DefaultRegionSync)
	setDefault(&cfg.Timeout, DefaultRegionTimeout)
	rc := region.Defaults(0, 1)
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
	rc.MaxRemote = regionMaxKeys(cfg.MaxKeys)
	gc := global.Config{Name: cfg.Name, Sync: cfg.Sync, Timeout: cfg.Timeout, Model: rc, Local: cfg.Local,
		Forwarder: cfg.Forwarder, TLS: cfg.TLS, Keys: [][]byte{cluster.PeerKey(cfg.Secret)}}
	for _, old := range cfg.OldSecrets {
		gc.Keys = append(gc.Keys, cluster.PeerKey(old))
	}
	for _, p := range cfg.Peers {
		gc.Peers = append(gc.Peers, global.Peer{Name: p.Name, Addr: p.Addr})
	}
	return gc, nil
}

// regionMaxKeys is --region-max-keys as region.Config.MaxRemote: 0 takes
// the default, a negative value is no bound.
func regionMaxKeys(n int) int {
	switch {
	case n == 0:
		return DefaultRegionMaxKeys
	case n < 0:
		return 0
	}
	return n
}

// regionDelegate is what the regions' node asks of the server.
type regionDelegate struct{ s *Server }

func (d regionDelegate) UnixNano() int64 { return d.s.unixNano() }

func (d regionDelegate) Policy(name []byte) *policy.Policy { return d.s.pol.Get(name) }

// startRegion takes back this region's units of the global keys the key
// store was loaded with, then starts the exchanges: before the server
// serves, and after the policies load, whose rule keys may be global.
func (s *Server) startRegion() {
	if s.reg == nil {
		return
	}
	if n := s.reg.Start(s.done); n > 0 {
		s.log.Info("regions: took back this region's units of global keys from the data directory", "keys", n)
	}
}

// decideGlobal decides a global key. ok is false for a request the regions
// leave to the local store: RL.CHECK of a policy that is not global.
func (s *Server) decideGlobal(key []byte, r *decide.Request) (o decide.Outcome, ok bool, err error) {
	switch {
	case r.Op == decide.OpCheck && !global.GlobalPolicy(r.Policy):
		return o, false, nil
	case r.Op == decide.OpCheck:
		var ds [policy.MaxRules]window.Decision
		n := len(r.Policy.Rules)
		left, err := s.reg.Check(key, r.Policy, r.Now, r.Cost, r.Peek, ds[:n])
		if err != nil {
			return o, true, err
		}
		o.D, o.Rule = decide.Binding(ds[:n], left)
		if !o.D.Allowed && r.Policy.Shadow {
			o.D.Allowed, o.D.Wait, o.Shadowed = true, 0, true
		}
		return o, true, nil
	case r.Op == decide.OpThrottle:
		return o, true, global.ErrNotGlobal(window.KindToken)
	case r.Params.Kind != window.KindSlide && r.Params.Kind != window.KindFixed:
		return o, true, global.ErrNotGlobal(r.Params.Kind)
	case r.Params.FirstHit:
		return o, true, decide.ErrAnchorNotGlobal // decide/anchor.go
	}
	lim := region.Limit{Kind: r.Params.Kind, Limit: r.Params.Limit, Window: r.Params.Period}
	o.D, err = s.reg.Decide(key, lim, r.Now, r.Cost, r.Peek)
	return o, true, err
}

// refusedGlobal refuses cmd on a global key, and reports whether it did
// (global.Node.RefusedGlobal says why).
func (s *Server) refusedGlobal(c *client, key []byte, cmd string) bool {
	if s.reg == nil || !s.reg.RefusedGlobal(key) {
		return false
	}
	c.conn.WriteError(global.ErrRefusedGlobal(cmd))
	return true
}

// refusedGlobalPolicy refuses RL.RESERVE key POLICY name when the policy
// is global on key, and reports whether it did.
func (s *Server) refusedGlobalPolicy(c *client, key, name []byte) bool {
	if s.reg == nil {
		return false
	}
	if p := s.pol.Get(name); !s.reg.RefusedGlobalPolicy(key, p) {
		return false
	}
	c.conn.WriteError(global.ErrReserveGlobal)
	return true
}

// infoRegions is INFO regions.
func (s *Server) infoRegions() []core.Pair {
	if s.reg == nil {
		return []core.Pair{{Key: "rl_regions", Val: 0}}
	}
	return pairsOf(s.reg.Info())
}

// pairsOf is fs as pairs of a map reply or an INFO section.
func pairsOf(fs []global.Field) []core.Pair {
	ps := make([]core.Pair, len(fs))
	for i, f := range fs {
		ps[i] = core.Pair{Key: f.Key, Val: f.Val}
	}
	return ps
}

// byNameOnly says INFO shows a section only when asked by its name, not for
// all or everything: tools compare those with Redis 7's sections, and
// regions is rlstore's own.
func byNameOnly(name string) bool { return name == "regions" }

// peerRegion is RL.PEER REGION payload, on a peer's connection.
func (s *Server) peerRegion(c *client, payload []byte) {
	_, overTLS := c.g.Conn.(*tls.Conn)
	ack, refusal := s.reg.Receive(payload, overTLS)
	if refusal != "" {
		c.conn.WriteError(refusal)
		return
	}
	c.conn.WriteBulk(ack)
}
