package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// config is everything rlstore can be told at start. loadConfig fills it from, in
// order of precedence: command-line flags, the YAML config file, RLSTORE_*
// environment variables, and the defaults written in newFlagSet.
type config struct {
	Bind            string
	Port            int
	RequirePass     string
	RequirePassFile string            // a file holding the password, kept out of the process list
	RenameCommands  map[string]string // --rename-command: old name → new name, "" to disable
	passOnCmdline   bool              // --requirepass was a command-line argument, which any local user can read
	ProtectedMode   bool
	MaxClients      int
	MaxMemory       int64 // bytes of key state; 0: no limit
	MaxKeys         int64 // 0: no limit
	MaxRequestBytes int64
	MaxKeyBytes     int64 // longest key a command may name; 0: no limit
	MaxPolicies     int
	ReserveExpiry   string // commit|cancel: what an expired RL.RESERVE reservation does
	ClientOutput    int64  // most bytes of replies held for one client; 0: no limit
	ClientsMemory   int64  // most bytes of replies held for all clients; 0: no limit
	Shards          int
	Hz              int // key-store sweeps per second
	SweepBudget     int // slots one sweep may visit
	AppendFsync     string
	DataDir         string
	SaveInterval    time.Duration // between periodic snapshots; 0: none
	LogFormat       string
	LogLevel        string
	ShutdownTimeout time.Duration
	PprofAddr       string // host:port serving /debug/pprof/; "": off
	ServerThreads   threadsSetting
	MetricsAddr     string // host:port serving /metrics, /healthz, /readyz and /debug/pprof/; "": off
	SlowlogSlower   int64  // microseconds, as redis-server's slowlog-log-slower-than; -1: off, 0: every command
	SlowlogMaxLen   int64
	TLSPort         int // 0: no TLS port
	TLSCertFile     string
	TLSKeyFile      string
	TLSCACertFile   string
	TLSAuthClients  string        // yes|no|optional
	ACLFile         string        // users in redis-server's aclfile syntax
	AuthFailLimit   int           // wrong passwords per client address per AuthFailWindow; 0: no limit
	AuthFailWindow  time.Duration //
	ConfigFile      string
	Cluster         clusterFlags
	Replicas        replicaFlags
	Gateway         gatewayFlags
	Region          regionFlags // regions.go

	DebugCommand string // no|yes|local, as redis.conf's enable-debug-command
}

// envPrefix starts the environment variable of each flag: --max-keys is RLSTORE_MAX_KEYS.
const envPrefix = "RLSTORE_"

// newFlagSet defines every option of rlstore on c, and is the one place their
// names, defaults and help are written. Defining a flag stores its default in c.
func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("rlstore", flag.ContinueOnError)
	fs.StringVar(&c.Bind, "bind", "127.0.0.1", "IP `address` to listen on (0.0.0.0 or :: for every interface; see --protected-mode)")
	fs.IntVar(&c.Port, "port", 6379, "TCP `port` to listen on; 0 picks a free port and logs it")
	fs.StringVar(&c.RequirePass, "requirepass", "", "`password` clients must send with AUTH; empty: no authentication. On the command line any local user can read it in the process list: prefer --requirepass-file, RLSTORE_REQUIREPASS or the config file")
	fs.StringVar(&c.RequirePassFile, "requirepass-file", "", "`file` whose contents (less a trailing newline) are the password clients must send with AUTH; instead of --requirepass")
	fs.Var((*renames)(&c.RenameCommands), "rename-command", "`\"COMMAND NEWNAME\"` serves COMMAND under a new name; \"COMMAND\" alone disables it (\"FLUSHALL\" stops any client resetting every quota). Repeat it, or separate pairs with commas")
	fs.Var(newYesNo(&c.ProtectedMode, true), "protected-mode", "`yes|no`: with yes, refuse to start on a non-loopback --bind without --requirepass")
	fs.IntVar(&c.MaxClients, "maxclients", server.DefaultMaxClients, "maximum `number` of simultaneous client connections; more are refused with an error")
	fs.Var(newSize(&c.MaxMemory, 0), "maxmemory", "`size` of memory for key state, e.g. 100mb or 1gb (k=1000, kb=1024); when full, new keys get -OOM; 0: no limit")
	fs.Int64Var(&c.MaxKeys, "max-keys", 0, "maximum `number` of keys; beyond it, new keys get -OOM; 0: no limit")
	fs.Var(newSize(&c.MaxRequestBytes, server.DefaultMaxRequestBytes), "max-request-bytes", "largest request a client may send, a `size` (1mb); a larger one gets a protocol error and is disconnected")
	fs.Var(newSize(&c.ClientsMemory, server.DefaultMaxMemoryClients), "maxmemory-clients", "most bytes of replies held for all clients together, a `size` (256mb), like redis.conf's maxmemory-clients: past it, the clients holding the most are closed first; 0: no limit")
	fs.Var(newSize(&c.ClientOutput, server.DefaultClientOutputLimit), "client-output-limit", "most bytes of replies held for one client, a `size` (64mb), like redis.conf's client-output-buffer-limit: a client whose replies pass it (a huge KEYS it does not read) is disconnected; 0: no limit")
	fs.Var(newSize(&c.MaxKeyBytes, 0), "max-key-bytes", "longest key a command may name, a `size` (512, 1kb); a longer one gets an error; 0: no limit")
	fs.IntVar(&c.MaxPolicies, "max-policies", server.DefaultMaxPolicies, "most `number` of policies RL.POLICY SET may define; their bytes also count in --maxmemory")
	fs.Var(newOneOf(&c.ReserveExpiry, "commit", "commit", "cancel"), "reserve-expiry", "`commit|cancel`: what an RL.RESERVE reservation whose TTL runs out does: commit keeps its estimate charged; cancel gives it back, within about a second (the sweep) or at the key's next reservation command")
	fs.IntVar(&c.Shards, "shards", shard.DefaultShards, "`number` of lock stripes of the key store, a power of two")
	fs.IntVar(&c.Hz, "hz", int(time.Second/server.DefaultSweepInterval), "`number` of times per second the background sweep frees expired keys, 1-500")
	fs.IntVar(&c.SweepBudget, "sweep-budget", server.DefaultSweepBudget, "most key slots one background sweep visits, which bounds its cost; while sweeps find little to free, each visits a second's share of the keys")
	fs.Var(newOneOf(&c.AppendFsync, "everysec", "always", "everysec", "no"), "appendfsync", "`always|everysec|no`: when the append-only log is fsynced. always: no reply before its decision is on disk (one fsync shared by every client waiting); everysec: a crash loses about the last second; no: the OS decides when it reaches the disk")
	fs.StringVar(&c.DataDir, "data-dir", "", "`folder` for policies, snapshots and the append-only log, created if missing; empty: persistence is off and all state is in memory only")
	fs.Var(newSeconds(&c.SaveInterval, persistence.DefaultSnapshotInterval), "save-interval", "how often a snapshot of the whole store is taken while anything changes, a `duration` (300, or 5m); 0: only on SAVE, BGSAVE, shutdown, or once the log outgrows the last snapshot")
	fs.Var(newOneOf(&c.LogFormat, "text", "text", "json"), "log-format", "`text|json`: format of the logs written to standard error")
	fs.Var(newOneOf(&c.LogLevel, "info", "debug", "info", "warn", "error"), "log-level", "`debug|info|warn|error`: the least severe level logged")
	fs.Var(newSeconds(&c.ShutdownTimeout, server.DefaultShutdownTimeout), "shutdown-timeout", "`duration` that SIGTERM, SIGINT or SHUTDOWN waits for clients to drain before closing them (10 seconds, or 500ms, 1m)")
	fs.Var(&c.ServerThreads, "server-threads", "`all|auto|number`: how many threads run the server's code at once (Go's GOMAXPROCS). all: every core the process may use, for the most throughput; auto: the cores other processes leave free, measured every second, for less CPU per request on a shared host; a GOMAXPROCS in the environment wins over all and auto")
	fs.StringVar(&c.PprofAddr, "pprof-addr", "", "`host:port` serving Go's CPU, heap and goroutine profiles at /debug/pprof/ (use a loopback address, e.g. 127.0.0.1:6060); empty: off")
	c.Cluster.define(fs)
	c.Replicas.define(fs)
	c.Gateway.define(fs)
	c.Region.define(fs)
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "`host:port` serving Prometheus /metrics, /healthz, /readyz and /debug/pprof/ (e.g. 127.0.0.1:9121); empty: off")
	fs.Int64Var(&c.SlowlogSlower, "slowlog-log-slower-than", server.DefaultSlowlogSlowerThan.Microseconds(), "SLOWLOG records commands that take at least this many `microseconds`; -1: none, 0: every command")
	fs.Int64Var(&c.SlowlogMaxLen, "slowlog-max-len", server.DefaultSlowlogMaxLen, "most `number` of entries SLOWLOG keeps")
	fs.Var(newOneOf(&c.DebugCommand, server.DebugNo, server.DebugNo, server.DebugYes, server.DebugLocal), "enable-debug-command", "`no|yes|local`: serve DEBUG (SET-CLOCK stops the clock, for tests that replay recorded traffic), to loopback clients only with local; no: there is no DEBUG command")
	fs.IntVar(&c.TLSPort, "tls-port", 0, "TCP `port` serving TLS, beside --port's plain text; 0: no TLS")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "PEM `file` of the server's certificate (chain) for --tls-port; reloaded on SIGHUP or when it changes")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", "", "PEM `file` of the private key of --tls-cert-file")
	fs.StringVar(&c.TLSCACertFile, "tls-ca-cert-file", "", "PEM `file` of the CA certificates that client certificates must chain to")
	fs.Var(newOneOf(&c.TLSAuthClients, "yes", "yes", "no", "optional"), "tls-auth-clients", "`yes|no|optional`: whether TLS clients must present a certificate signed by --tls-ca-cert-file (mutual TLS); optional checks one only if given")
	fs.StringVar(&c.ACLFile, "aclfile", "", "`file` of users in redis-server's aclfile syntax (user NAME on >password ~pattern +command ...); ACL LOAD reads it again")
	fs.IntVar(&c.AuthFailLimit, "auth-fail-limit", server.DefaultAuthFailLimit, "wrong passwords one client IP address may send within --auth-fail-window before its AUTH is refused unchecked until the oldest leaves the window, a `number`; 0: no limit")
	fs.Var(newSeconds(&c.AuthFailWindow, server.DefaultAuthFailWindow), "auth-fail-window", "the sliding window of --auth-fail-limit, a `duration` in whole seconds (60, 1m)")
	fs.StringVar(&c.ConfigFile, "config", "", "YAML `file` of options, named like the flags (port: 6380); flags override it, and it overrides RLSTORE_* variables")
	return fs
}

// defaultConfig returns the configuration rlstore runs with when told nothing.
func defaultConfig() config {
	var c config
	newFlagSet(&c)
	return c
}

// loadConfig builds the config from command-line args (without the program name),
// the config file they or the environment name, and the environment, read
// through lookupEnv. It returns flag.ErrHelp, after writing the help to
// usage, if help was asked for.
//
// Like redis-server, a first argument that is not a flag names the config file.
func loadConfig(args []string, lookupEnv func(string) (string, bool), usage io.Writer) (config, error) {
	var c config
	fs := newFlagSet(&c)
	fs.SetOutput(io.Discard) // errors are returned, and help printed below
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		args = append([]string{"--config", args[0]}, args[1:]...)
	}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		printUsage(usage, fs)
		return c, err
	} else if err != nil {
		// The flag package names flags with one dash; rlstore's help uses two.
		msg := strings.Replace(err.Error(), " -", " --", 1)
		return c, fmt.Errorf("%s (rlstore --help lists the flags)", msg)
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := applyEnv(fs, given, lookupEnv); err != nil {
		return c, err
	}
	if c.ConfigFile != "" {
		if err := applyFile(fs, given, c.ConfigFile); err != nil {
			return c, err
		}
	}
	c.passOnCmdline = given["requirepass"]
	if err := c.readPassFile(); err != nil {
		return c, err
	}
	if err := c.Cluster.readSecretFile(); err != nil {
		return c, err
	}
	return c, c.validate()
}

// applyEnv sets every flag not given on the command line from its RLSTORE_*
// variable, if that is set and not empty.
func applyEnv(fs *flag.FlagSet, given map[string]bool, lookupEnv func(string) (string, bool)) error {
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		v, ok := lookupEnv(name)
		if err != nil || given[f.Name] || !ok || v == "" {
			return
		}
		if e := f.Value.Set(v); e != nil {
			err = fmt.Errorf("environment %s: %w", name, e)
		}
	})
	return err
}

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `rlstore: a rate-limit store that speaks the Redis protocol.

Usage:
  rlstore [config.yaml] [--flag value ...]

Every flag can also be set in the YAML config file under its own name
(maxmemory: 1gb), or in the environment as RLSTORE_ and the name in capitals
with _ for - (RLSTORE_MAX_KEYS=1000000). Flags win over the file, and the file
over the environment. Flags take "--name value" or "--name=value".

Flags:
`)
	fs.VisitAll(func(f *flag.Flag) {
		arg, help := flag.UnquoteUsage(f)
		help = strings.TrimPrefix(help, arg+": ")
		fmt.Fprintf(w, "  --%s %s\n    \t%s", f.Name, arg, help)
		if f.DefValue != "" && f.DefValue != "0" {
			fmt.Fprintf(w, " (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, " [%s]\n", envName(f.Name))
	})
}

// validate checks what each flag's own parsing cannot: ranges, and how options combine.
func (c config) validate() error {
	checks := []struct {
		bad bool
		msg string
	}{
		{c.Port < 0 || c.Port > 65535, "--port " + strconv.Itoa(c.Port) + " is out of range 0-65535"},
		{c.MaxClients < 1 || c.MaxClients > 1<<32-1, "--maxclients must be between 1 and 4294967295"},
		{c.MaxKeys < 0, "--max-keys must not be negative"},
		{c.MaxRequestBytes < 1024, "--max-request-bytes must be at least 1kb"},
		{c.ClientOutput < 0, "--client-output-limit must not be negative"},
		{c.ClientsMemory < 0, "--maxmemory-clients must not be negative"},
		{c.MaxKeyBytes < 0 || c.MaxKeyBytes > c.MaxRequestBytes, "--max-key-bytes must be between 0 and --max-request-bytes"},
		{c.MaxPolicies < 1, "--max-policies must be at least 1"},
		{c.Shards < 1 || bits.OnesCount(uint(c.Shards)) != 1, "--shards must be a power of two, got " + strconv.Itoa(c.Shards)},
		{c.Hz < 1 || c.Hz > 500, "--hz must be between 1 and 500"},
		{c.SweepBudget < 1, "--sweep-budget must be at least 1"},
		{c.ShutdownTimeout <= 0, "--shutdown-timeout must be positive"},
		{c.SlowlogSlower < -1, "--slowlog-log-slower-than must be -1 or more"},
		{c.SlowlogMaxLen < 1, "--slowlog-max-len must be at least 1"},
		{c.AuthFailLimit < 0, "--auth-fail-limit must not be negative"},
		{c.TLSPort < 0 || c.TLSPort > 65535, "--tls-port " + strconv.Itoa(c.TLSPort) + " is out of range 0-65535"},
		{c.TLSPort != 0 && (c.TLSCertFile == "" || c.TLSKeyFile == ""), "--tls-port needs --tls-cert-file and --tls-key-file"},
		{c.Cluster.TLS && (c.TLSPort == 0 || c.TLSCACertFile == ""), "--tls-cluster yes needs --tls-port and --tls-ca-cert-file (to check peers' certificates with)"},
		{c.AuthFailWindow < time.Second || c.AuthFailWindow%time.Second != 0, "--auth-fail-window must be whole seconds, at least 1"},
	}
	for _, ch := range checks {
		if ch.bad {
			return errors.New(ch.msg)
		}
	}
	ip, err := c.bindAddr()
	if err != nil {
		return err
	}
	if err := c.checkDataDir(); err != nil {
		return err
	}
	if err := c.Cluster.validate(); err != nil && !c.Region.takesSecrets(c.Cluster) {
		return err
	}
	if err := c.Replicas.validate(); err != nil {
		return err
	}
	if err := c.Gateway.validate(); err != nil {
		return err
	}
	if err := c.Region.validate(); err != nil {
		return err
	}
	if err := c.checkClusterTrust(); err != nil {
		return err
	}
	return c.checkProtectedMode(ip)
}

// bindAddr parses --bind. Only an IP address or "localhost" is accepted, so
// protected mode can tell for certain whether the address is loopback.
func (c config) bindAddr() (netip.Addr, error) {
	if strings.EqualFold(c.Bind, "localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
	}
	ip, err := netip.ParseAddr(c.Bind)
	if err != nil {
		return ip, fmt.Errorf("--bind %q is not an IP address (like 127.0.0.1, ::1 or 0.0.0.0)", c.Bind)
	}
	return ip, nil
}

// checkProtectedMode refuses to expose an unauthenticated server beyond this machine.
// An ACL file counts as a password when every user it turns on needs one.
func (c config) checkProtectedMode(ip netip.Addr) error {
	if !c.ProtectedMode || ip.IsLoopback() {
		return nil
	}
	withPass := c.RequirePass != ""
	if c.ACLFile != "" {
		var err error
		if withPass, err = server.ACLFileHasPassword(c.ACLFile, c.RequirePass); err != nil {
			return fmt.Errorf("--aclfile: %w", err)
		}
	}
	if withPass {
		return nil
	}
	return fmt.Errorf("protected mode: refusing to listen on %s, which is not a loopback address, "+
		"without a password. Set --requirepass or an --aclfile whose users all have passwords, or pass "+
		"--protected-mode no if every client that can reach this address may use the server", c.Bind)
}

// checkDataDir rejects a --data-dir that exists but is not a folder. A missing
// one is fine: persistence will create it.
func (c config) checkDataDir() error {
	if c.DataDir == "" {
		return nil
	}
	st, err := os.Stat(c.DataDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--data-dir: %w", err)
	case !st.IsDir():
		return fmt.Errorf("--data-dir %s is not a folder", c.DataDir)
	}
	return nil
}

// addr is the host:port to listen on.
func (c config) addr() string { return net.JoinHostPort(c.Bind, strconv.Itoa(c.Port)) }

func (c config) shardConfig() shard.Config {
	return shard.Config{Shards: c.Shards, MaxKeys: c.MaxKeys, MaxMemory: c.MaxMemory,
		CancelExpired: c.ReserveExpiry == "cancel", Charged: policy.AppendCharged}
}

func (c config) serverConfig(store *shard.Map, dur server.Durability, log *slog.Logger) server.Config {
	return server.Config{
		Addr:              c.addr(),
		Store:             store,
		Durability:        dur,
		Logger:            log,
		Version:           version(),
		RequirePass:       c.RequirePass,
		RenameCommands:    c.RenameCommands,
		MaxClients:        c.MaxClients,
		MaxRequestBytes:   c.MaxRequestBytes,
		MaxKeyBytes:       c.MaxKeyBytes,
		MaxPolicies:       c.MaxPolicies,
		ClientOutputLimit: outputLimit(c.ClientOutput),
		MaxMemoryClients:  outputLimit(c.ClientsMemory),
		ShutdownTimeout:   c.ShutdownTimeout,
		SweepInterval:     time.Second / time.Duration(c.Hz),
		SweepBudget:       c.SweepBudget,

		SlowlogSlowerThan: slowerThan(c.SlowlogSlower),
		SlowlogMaxLen:     c.SlowlogMaxLen,
		ACLFile:           c.ACLFile,
		AuthFailLimit:     authFailLimit(c.AuthFailLimit),
		AuthFailWindow:    c.AuthFailWindow,

		ConfigFile:   absPath(c.ConfigFile),
		DataDir:      absPath(c.DataDir),
		AppendFsync:  c.AppendFsync,
		SaveInterval: c.SaveInterval,

		EnableDebugCommand: c.DebugCommand,
	}
}

// absPath is path made absolute, as Redis shows config_file and dir; "" stays "".
func absPath(path string) string {
	if path == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// authFailLimit turns --auth-fail-limit's 0 (no limit) into the server's -1.
func authFailLimit(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// slowerThan turns --slowlog-log-slower-than's microseconds into the
// server's duration, where 0 is the default and 1ns logs every command.
func slowerThan(us int64) time.Duration {
	switch {
	case us < 0:
		return -1
	case us == 0:
		return 1
	}
	return time.Duration(us) * time.Microsecond
}

// version is the module version the binary was built from, or "" (the
// server then says "dev") for a build from a checkout.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Main.Version == "(devel)" {
		return ""
	}
	return info.Main.Version
}

// readPassFile sets RequirePass from --requirepass-file.
func (c *config) readPassFile() error {
	if c.RequirePassFile == "" {
		return nil
	}
	if c.RequirePass != "" {
		return errors.New("--requirepass and --requirepass-file are both set: give one")
	}
	b, err := os.ReadFile(c.RequirePassFile)
	if err != nil {
		return fmt.Errorf("--requirepass-file: %w", err)
	}
	c.RequirePass = strings.TrimRight(string(b), "\r\n")
	if c.RequirePass == "" {
		return fmt.Errorf("--requirepass-file %s is empty", c.RequirePassFile)
	}
	return nil
}

// outputLimit is --client-output-limit as server.Config takes it, where 0
// means the default and -1 none.
func outputLimit(n int64) int64 {
	if n == 0 {
		return -1
	}
	return n
}
