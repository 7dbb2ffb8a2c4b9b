package server

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/debugcmd"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/rlstore/rlstore/server/internal/global"
	"github.com/rlstore/rlstore/server/internal/handoff"
	"github.com/rlstore/rlstore/server/internal/introspect"
	"github.com/rlstore/rlstore/server/internal/multi"
	"github.com/rlstore/rlstore/server/internal/observe"
	"github.com/rlstore/rlstore/server/internal/replica"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/rlstore/rlstore/shard"
)

// Config configures a Server. cmd/rlstore fills it in. New gives every
// optional field left zero the default written next to it, from the
// constants below, and nowhere else.
type Config struct {
	Addr     string                // host:port to listen on; port 0 picks a free one. Default DefaultAddr
	Listener net.Listener          // if set, Serve serves it instead of listening on Addr (e.g. TLS)
	Store    *shard.Map            // required
	Policies *persistence.Policies // where RL.POLICY SET makes policies durable; nil keeps them in memory only
	Logger   *slog.Logger          // default slog.Default()
	Clock    func() time.Time      // the clock decisions and sweeps use. Default time.Now
	Version  string                // rlstore's version, shown by INFO and HELLO. Default "dev"

	// EnableDebugCommand is redis.conf's enable-debug-command: DebugNo (the
	// default) has no DEBUG command, DebugYes serves it, DebugLocal to
	// loopback clients only. With it the clock is settable (package debugcmd).
	EnableDebugCommand string

	RequirePass string // the default user's password; "" needs no AUTH. CONFIG SET can change it
	// ACLFile names a file of users in redis-server's aclfile syntax; a
	// "default" user in it replaces RequirePass. ACL LOAD reads it again.
	ACLFile string
	// AuthFailLimit wrong passwords from one IP address within
	// AuthFailWindow make that address's next AUTH wait, unchecked, until
	// the oldest leaves the window. Defaults DefaultAuthFailLimit and
	// DefaultAuthFailWindow; a negative limit turns the guard off.
	AuthFailLimit   int
	AuthFailWindow  time.Duration
	MaxClients      int   // connections beyond it are refused. Default DefaultMaxClients
	MaxRequestBytes int64 // largest request, and largest MULTI queue. Default DefaultMaxRequestBytes

	// RenameCommands serves the command named by each key under its value
	// instead, or not at all if the value is "" (redis.conf's rename-command).
	RenameCommands map[string]string
	MaxKeyBytes    int64 // a longer key in any keyed command is refused; 0: no limit
	MaxPolicies    int   // RL.POLICY SET of a new policy beyond it is refused. Default DefaultMaxPolicies

	// ClientOutputLimit caps the replies the server holds for one client,
	// in bytes: a client whose replies pass it is disconnected, as Redis does
	// past its client-output-buffer-limit. Replies go out after each batch
	// of requests and the server stops reading a client whose socket is
	// full, so a client that pipelines without reading is held to a batch's
	// replies anyway; the limit bounds a single large reply (KEYS, CLIENT
	// LIST) and pushed frames. Default DefaultClientOutputLimit; -1: none.
	ClientOutputLimit int64
	// MaxMemoryClients caps the replies all clients together hold, in
	// bytes, as redis.conf's maxmemory-clients does: past it the clients
	// holding the most are closed first. Default DefaultMaxMemoryClients;
	// -1: none.
	MaxMemoryClients int64

	// A client sending a request of MaxRequestBytes makes the server hold up
	// to about twice that for its connection while it arrives (a buffer that
	// doubles as bytes arrive), so MaxRequestBytes × MaxClients × 2 bounds
	// what requests can make the server hold. Rate-limit requests are tiny.

	// Durability keeps Store on disk: SAVE, BGSAVE, LASTSAVE, FLUSHALL and
	// INFO persistence go through it, every batch that changed state is
	// committed before its replies, and Shutdown snapshots after its drain
	// unless the client said SHUTDOWN NOSAVE. nil means no persistence: SAVE
	// and BGSAVE then reply with an error rather than claim a save that did
	// not happen. The server never closes it: its owner does, after Serve.
	Durability Durability

	// Shown only, by INFO and CONFIG GET, as Redis shows its own settings:
	// the config file and the data dir cmd/rlstore read ("" for none), and
	// the log's fsync mode and snapshot interval as configured, which
	// CONFIG GET shows even without Durability, as Redis shows appendfsync
	// with appendonly no. AppendFsync defaults to "everysec".
	ConfigFile   string
	DataDir      string
	AppendFsync  string
	SaveInterval time.Duration

	// Cluster, if set, makes the server a node of a cluster: it routes
	// keyed commands to their owners and answers CLUSTER. nil: one node.
	Cluster *ClusterConfig
	// Region, if set, makes the server one region of several sharing
	// global limits (docs/regions.md). nil: every limit is this server's.
	Region *RegionConfig

	// SlowlogSlowerThan is the shortest run SLOWLOG records. Default
	// DefaultSlowlogSlowerThan; negative: none. Redis's 0, every command, is 1ns here.
	SlowlogSlowerThan time.Duration
	SlowlogMaxLen     int64 // most SLOWLOG entries kept. Default DefaultSlowlogMaxLen
	// LatencyMonitorThreshold is the shortest run LATENCY LATEST records; 0: off, as in Redis.
	LatencyMonitorThreshold time.Duration

	ShutdownTimeout time.Duration // how long a SHUTDOWN command drains. Default DefaultShutdownTimeout
	SweepInterval   time.Duration // how often expired keys are swept. Default DefaultSweepInterval
	SweepBudget     int           // most slots visited per sweep (see sweepPace). Default DefaultSweepBudget
}

// The defaults of Config.
const (
	DefaultAddr              = "127.0.0.1:6379"
	DefaultMaxClients        = 10000    // as redis-server
	DefaultMaxRequestBytes   = 1 << 20  // far above any rate-limit command; redis-server allows 512 MiB
	DefaultClientOutputLimit = 64 << 20 // KEYS over about 3M short keys fits
	DefaultShutdownTimeout   = 10 * time.Second
	DefaultSweepInterval     = 100 * time.Millisecond
	DefaultSweepBudget       = 16384 // with the interval, at most about 160k slots a second
	// DefaultMaxMemoryClients bounds the replies all clients together may
	// hold, as redis.conf's maxmemory-clients does: 4 of the largest replies
	// one client may hold (DefaultClientOutputLimit).
	DefaultMaxMemoryClients = 256 << 20
	// The slow log's and the latency monitor's, as redis-server's.
	DefaultSlowlogSlowerThan = 10 * time.Millisecond
	DefaultSlowlogMaxLen     = 128
)

// The values of Config.EnableDebugCommand, as redis.conf's enable-debug-command.
const (
	DebugNo    = "no" // the default: there is no DEBUG command
	DebugYes   = "yes"
	DebugLocal = "local" // from loopback connections only
)

// withDebug validates cfg.EnableDebugCommand and, if DEBUG is enabled,
// puts a settable clock (package debugcmd) in front of cfg.Clock (nil:
// time.Now).
func withDebug(cfg *Config) (*debugcmd.Clock, error) {
	switch cfg.EnableDebugCommand {
	case "", DebugNo:
		cfg.EnableDebugCommand = DebugNo
		return nil, nil
	case DebugYes, DebugLocal:
	default:
		return nil, errors.New("server: EnableDebugCommand must be no, yes or local")
	}
	base := cfg.Clock
	if base == nil {
		base = time.Now
	}
	d := debugcmd.NewClock(base)
	cfg.Clock = d.Now
	return d, nil
}

// The defaults of the brute-force guard (auth.Guard).
const (
	DefaultAuthFailLimit  = 10
	DefaultAuthFailWindow = time.Minute
)

// ACLFileHasPassword loads the ACL file at path and reports whether no one
// can use the server without a password: every user it turns on needs one,
// and so does the default user (the file's, or else requirepass). Protected
// mode counts that as a password. It returns the file's error, if any.
func ACLFileHasPassword(path, requirePass string) (bool, error) {
	a, err := auth.Load(path)
	if err != nil {
		return false, err
	}
	return a.NeedsPasswords(requirePass), nil
}

// DefaultMaxPolicies is Config.MaxPolicies' default: far more than any
// deployment defines, and with names capped at 256 bytes, an RL.POLICY LIST
// of them all stays under 3 MB.
const DefaultMaxPolicies = 10000

// ErrServerClosed is Serve's error once Shutdown or Close has run before it.
var ErrServerClosed = errors.New("server: closed")

// Server serves Redis clients rlstore's commands. Make it with New and start
// it with Serve; stop it with Shutdown, which drains clients, or Close, which
// does not. Its methods are safe for concurrent use.
type Server struct {
	cfg        Config
	log        *slog.Logger
	table      *core.Table                                 // the command table
	pipe       core.Pipeline                               // the one path every command takes; its delegates are the server's
	clientSlot core.Slot[client]                           // each session's client
	runs       []func(s *Server, c *client, args [][]byte) // by core.Command.ID: the runs declared in the server's form (see call)
	started    time.Time
	pol        *decide.Policies    // the named policies (RL.POLICY, RL.CHECK)
	rt         *route.Router       // the router: the cluster commands, and with a cluster every keyed command's route
	ho         *handoff.Node       // nil without a cluster
	repl       *replica.Replicator // nil without --replicas
	reg        *global.Node        // nil without regions
	info       infoExtra           // behind INFO's Redis fields (info.go)

	clock decide.Clock // the commands' time: cfg.Clock, or, when that is time.Now, the batch's clock read (decide.Clock)

	users      *auth.Users  // who may use the server: the ACL file or requirepass, and each session's user
	guard      *auth.Guard  // nil when off
	mem        *resp.Budget // the budget of all clients' replies
	maxClients atomic.Int64
	obs        *observe.Observers // CLIENT TRACKING and MONITOR
	dec        *decide.Decisions  // the decision commands, their counters
	slow       observe.Slowlog

	protoErrors atomic.Int64    // connections closed for a protocol error
	dur         *durable.Writes // write commands under the durability's rules, SAVE, BGSAVE, LASTSAVE

	outputLimitClosed atomic.Int64 // clients closed for passing the output limit, for INFO

	clients *core.Registry // the connected clients' sessions

	life     sync.Mutex // guards ln, stopping, sweepEnd, metricWriters and readyChecks
	ln       *resp.Listener
	stopping bool
	sweepEnd func() // stops the sweep loop and waits for it

	metricWriters []func(io.Writer) // AddMetrics
	readyChecks   []func() error    // AddReadyCheck
	done          chan struct{}
	stopErr       error // written before done is closed
}

// New validates cfg and returns a Server that is not yet listening.
func New(cfg Config) (*Server, error) {
	debug, err := withDebug(&cfg)
	if err != nil {
		return nil, err
	}
	wallClock := cfg.Clock == nil
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: cfg.Logger, table: core.NewTable(), started: time.Now(),
		clients: core.NewRegistry(), done: make(chan struct{})}
	s.clock = decide.Clock{Wall: wallClock, Started: s.started, Read: cfg.Clock}
	s.info.runID = newRunID()
	if s.users, err = auth.NewUsers(cfg.ACLFile, cfg.RequirePass, &s.pipe.Slots); err != nil {
		return nil, err
	}
	s.obs = observe.NewObservers(observeDelegate{s}, s.clients, &s.pipe.Slots)
	s.pol = decide.NewPolicies(decide.PolicyConfig{Store: cfg.Store, Durable: cfg.Policies, Max: cfg.MaxPolicies,
		Logger: cfg.Logger, Changed: s.policyChanged})
	s.dec = decide.New(decide.Config{Store: cfg.Store, Table: s.table, Clock: &s.clock, Policies: s.pol,
		Front: decideFront{s}, Tracker: s.obs, Slots: &s.pipe.Slots})
	s.mem = s.newBudget(cfg.MaxMemoryClients)
	if s.guard, err = auth.NewGuard(cfg.AuthFailLimit, cfg.AuthFailWindow); err != nil {
		return nil, err
	}
	s.users.Serve(auth.LoginConfig{Front: authFront{s}, Guard: s.guard, Clock: cfg.Clock, Logger: cfg.Logger})
	s.maxClients.Store(int64(cfg.MaxClients))
	s.slow.SlowerThan.Store(int64(cfg.SlowlogSlowerThan))
	s.slow.MaxLen.Store(cfg.SlowlogMaxLen)
	s.slow.LatencyMs.Store(cfg.LatencyMonitorThreshold.Milliseconds())
	s.dur = durable.New(durable.Config{Durability: cfg.Durability, Store: cfg.Store, Logger: cfg.Logger, Now: s.unixNano})
	s.register(connectionCommands())
	s.registerSpecified(s.users.LoginCommands())
	s.registerClient()
	s.register(serverCommands())
	s.registerSpecified(s.dur.Commands())
	s.registerSpecified(introspect.New(s.table, commandDocs()).Commands())
	for _, cm := range s.slow.Commands() {
		s.table.Register(cm, nil)
	}
	for _, cm := range s.users.Commands() {
		s.table.Register(cm, nil)
	}
	s.registerSpecified(s.obs.PubsubCommands())
	s.registerSpecified(s.obs.MonitorCommands())
	s.registerSpecified(multi.New(pipeline{s}).Commands())
	s.registerSpecified(s.dec.DecisionCommands())
	s.registerSpecified(s.dec.LeaseCommands())
	s.registerSpecified(s.dec.ReserveCommands())
	s.registerSpecified(s.dec.AliasCommands())
	s.registerSpecified(s.pol.Commands())
	s.registerSpecified(s.dec.InfoCommands(&s.info.hits, &s.info.misses))
	if debug != nil {
		s.registerSpecified(debugcmd.New(debug, cfg.EnableDebugCommand == DebugLocal).Commands())
	}
	if err := s.attachCluster(); err != nil {
		return nil, err
	}
	s.setPipeline()
	if err := s.attachRegion(); err != nil {
		return nil, err
	}
	if s.reg != nil {
		s.dec.DecideGlobals(decideFront{s})
	}
	if err := s.pol.Load(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	s.startRegion() // region.go: after the policies, whose rule keys may be global
	s.registerKeyspace()
	if err := s.table.Rename(cfg.RenameCommands); err != nil { // redis.conf's rename-command
		return nil, err
	}
	return s, nil
}

func (cfg *Config) withDefaults() error {
	if cfg.Store == nil {
		return errors.New("server: no store")
	}
	if cfg.MaxClients < 0 || cfg.MaxRequestBytes < 0 || cfg.MaxKeyBytes < 0 || cfg.MaxPolicies < 0 || cfg.ClientOutputLimit < -1 || cfg.MaxMemoryClients < -1 ||
		cfg.SlowlogMaxLen < 0 || cfg.LatencyMonitorThreshold < 0 ||
		cfg.ShutdownTimeout < 0 || cfg.SweepInterval < 0 || cfg.SweepBudget < 0 {
		return errors.New("server: limits must not be negative")
	}
	setDefault(&cfg.Addr, DefaultAddr)
	setDefault(&cfg.Logger, slog.Default())
	setDefault(&cfg.AppendFsync, "everysec")
	if cfg.Clock == nil {
		cfg.Clock = time.Now // a func is not comparable, so setDefault cannot take it
	}
	setDefault(&cfg.Version, "dev")
	setDefault(&cfg.MaxClients, DefaultMaxClients)
	setDefault(&cfg.MaxPolicies, DefaultMaxPolicies)
	setDefault(&cfg.MaxRequestBytes, DefaultMaxRequestBytes)
	setDefault(&cfg.ClientOutputLimit, DefaultClientOutputLimit)
	if cfg.ClientOutputLimit < 0 {
		cfg.ClientOutputLimit = 0 // none
	}
	setDefault(&cfg.MaxMemoryClients, DefaultMaxMemoryClients)
	if cfg.MaxMemoryClients < 0 {
		cfg.MaxMemoryClients = 0 // none
	}
	setDefault(&cfg.ShutdownTimeout, DefaultShutdownTimeout)
	setDefault(&cfg.SweepInterval, DefaultSweepInterval)
	setDefault(&cfg.SweepBudget, DefaultSweepBudget)
	setDefault(&cfg.SlowlogSlowerThan, DefaultSlowlogSlowerThan)
	setDefault(&cfg.SlowlogMaxLen, DefaultSlowlogMaxLen)
	setDefault(&cfg.AuthFailLimit, DefaultAuthFailLimit)
	setDefault(&cfg.AuthFailWindow, DefaultAuthFailWindow)
	return nil
}

// setDefault sets *v to def if *v is its type's zero value.
func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// registerSpecified adds a family's commands to the table, their Redis
// flags, ACL categories and key specs from introspect.Specs.
func (s *Server) registerSpecified(cmds []core.Command) {
	specs := introspect.Specs()
	spec := func(name string) core.Spec { return specs[name] }
	for _, cm := range cmds {
		s.table.Register(cm, spec)
	}
}

// register adds commands declared in the server's form to the table.
func (s *Server) register(cmds []command) {
	specs := introspect.Specs()
	spec := func(name string) core.Spec { return specs[name] }
	for i := range cmds {
		s.table.Register(s.entry(&cmds[i]), spec)
		s.keepRuns(&cmds[i], s.table.Lookup(cmds[i].name))
	}
}

// keepRuns notes the run of d, and of its subcommands, under the ID of
// cm, its entry, for call.
func (s *Server) keepRuns(d *command, cm *core.Command) {
	for len(s.runs) <= cm.ID {
		s.runs = append(s.runs, nil)
	}
	s.runs[cm.ID] = d.run
	for i := range d.subs {
		s.keepRuns(&d.subs[i], &cm.Subs[i])
	}
}

// entry is the declaration d as the table's entry: its run and changes
// adapted to the table's form.
func (s *Server) entry(d *command) core.Command {
	cm := core.Command{Name: d.name, Arity: d.arity, Flags: d.flags, Run: s.adapt(d.run),
		FirstKey: d.firstKey, LastKey: d.lastKey, KeyStep: d.keyStep, Group: d.group, Summary: d.summary,
		ACL: d.acl, Keys: d.keys, Follows: d.follows, Peek: d.peek, Changes: s.changesOf(d.changes),
		Blind: d.blind, Wraps: d.wraps, Secret: d.secret}
	for j := range d.subs {
		cm.Subs = append(cm.Subs, s.entry(&d.subs[j]))
	}
	return cm
}

// changesOf makes the server's form of a changes attribute the table's.
func (s *Server) changesOf(f changesFunc) core.ChangesFunc {
	if f == nil {
		return nil
	}
	return func(args [][]byte) ([][]byte, []byte) { return f(s, args) }
}

// setPipeline sets the pipeline's delegates, once the cluster is attached.
func (s *Server) setPipeline() {
	s.clientSlot = core.NewSlot[client](&s.pipe.Slots)
	p := pipeline{s}
	s.pipe.Table, s.pipe.MaxQueueBytes = s.table, s.cfg.MaxRequestBytes
	s.pipe.Permit, s.pipe.Run, s.pipe.Observe = s.users, p, p
	if s.ho != nil {
		s.pipe.Route = s.rt
	}
}

// Serve listens and serves until Shutdown, Close or the SHUTDOWN command
// stops the server. ready, if not nil, is sent the listening address once
// clients can connect; Serve waits for the send, so give it a buffer or a
// reader. Serve returns the stop's error (nil for a clean stop) or the
// error that kept it from listening.
func (s *Server) Serve(ready chan<- net.Addr) error {
	ln, err := s.listen()
	if err != nil {
		return err
	}
	if err := s.attach(ln); err != nil {
		return err
	}
	s.log.Debug("listening", "addr", ln.Addr().String()) // cmd/rlstore logs the address for people and scripts
	if ready != nil {
		ready <- ln.Addr()
	}
	s.acceptLoop(s.listener()) // returns once the listener is finished
	<-s.done
	return s.stopErr
}

func (s *Server) listen() (net.Listener, error) {
	if s.cfg.Listener != nil {
		return s.cfg.Listener, nil
	}
	return net.Listen("tcp", s.cfg.Addr)
}

// attach makes ln the server's listener and starts the sweep, unless the
// server has already stopped or is serving.
func (s *Server) attach(ln net.Listener) error {
	s.life.Lock()
	defer s.life.Unlock()
	switch {
	case s.stopping:
		_ = ln.Close()
		return ErrServerClosed
	case s.ln != nil:
		_ = ln.Close()
		return errors.New("server: already serving")
	}
	s.ln = resp.NewListener(ln, &s.maxClients, s.log)
	s.sweepEnd = s.startSweep()
	if s.ho != nil {
		s.sweepEnd = s.ho.StartReplicas(s.sweepEnd) // shipping stops first, then the sweep
	}
	return nil
}

func (s *Server) listener() *resp.Listener {
	s.life.Lock()
	defer s.life.Unlock()
	return s.ln
}

func (s *Server) unixNano() int64 { return s.cfg.Clock().UnixNano() }

// Durability keeps the store's state on disk. *persistence.Store implements
// it; Config.Durability nil means state lives in memory only. See
// durable.Durability for its methods.
type Durability = durable.Durability

// ReplicaConfig turns on replicas for a cluster node: every slot's owner
// ships its changed keys to the slot's runner-up (cluster.Table.RunnerUp),
// which keeps them as copies, not served, and promotes them into its store
// when it takes the slot over from an owner that died. See replica.Config.
type ReplicaConfig = replica.Config

// DefaultReplicaInterval is --replica-interval's default: a crash loses at
// most this much of each key's decisions.
const DefaultReplicaInterval = replica.DefaultInterval
