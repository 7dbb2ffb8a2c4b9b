package cluster

import (
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"
)

// Config configures a Membership. cmd/rlstore fills it in; New gives every
// optional field left zero the default written next to it.
type Config struct {
	NodeName      string   // required; unique in the cluster while this process lives
	BindAddr      string   // gossip host:port (TCP and UDP); port 0 picks one. Default DefaultBindAddr
	AdvertiseAddr string   // the gossip address peers are told; default the bound one
	RESPAddr      string   // required: host:port where clients and peers reach this node's RESP port
	TLSAddr       string   // host:port of this node's TLS port, advertised to peers that dial over TLS; optional
	Seeds         []string // gossip addresses to join (see Bootstrap); empty starts a new cluster
	Keys          [][]byte // gossip encryption keys (16, 24 or 32 bytes); the first encrypts. None: plain gossip
	Timing        Timing   // default DefaultTiming()
	Logger        *slog.Logger

	// Remembered are the gossip addresses of the members this node had
	// before it restarted, read from its data dir. They are joined like
	// Seeds, but retried only until this node has joined: a remembered
	// address may since belong to another process.
	Remembered []string
	// Bootstrap lets a node given Seeds or Remembered serve alone before
	// it has met another member. Without it such a node waits
	// (View.Waiting): it never forms a cluster of its own while the one it
	// was told of, or belonged to, may exist.
	Bootstrap bool

	// OnChange is called with each new view, one call at a time, in order.
	// Membership holds no lock while it runs, but the next view waits for it.
	// New passes it and State to Start; Prepare leaves both to Start's
	// arguments.
	OnChange func(View)
	// State, if set, is carried to every node: see StateSync.
	State StateSync
	// Known is the known member set, as saved by an earlier run; nil
	// starts an empty one. The membership adds every member it sees alive
	// and removes those that leave gracefully: see Known.
	Known *Known
	// Deaths keeps the lease's death counts, and so its fences, across a
	// restart (see Lease.KeepDeaths): a node with a data dir gives its
	// DeathFile. nil keeps them in memory, and a restart forgets whom this
	// node fenced, which docs/cluster.md's proof leaves outside.
	Deaths *DeathFile
	// Processes, if set, is the data dir's list of the processes whose
	// store it holds: the membership adds its lease's incarnation to it
	// before it starts, and tells the lease the earlier ones (see
	// Lease.Restored). nil: this process restored no one's store.
	Processes *ProcessFile

	perSlotOnly bool // advertise what builds before chunks do, for tests of a rolling upgrade
}

// Timing is memberlist's failure detector and gossip pace. A dead node is
// detected after about Probe (the next probe of it) plus the suspicion
// time, Suspicion × Probe × max(1, log10(members)).
type Timing struct {
	Probe        time.Duration // how often each node probes one other
	ProbeTimeout time.Duration // how long a probe waits for its ack
	Suspicion    int           // the suspicion multiplier
	SuspicionMax int           // how many times longer a suspicion may last while no other member confirms it
	Gossip       time.Duration // how often gossip goes out
	PushPull     time.Duration // how often a full state exchange runs (anti-entropy)
	Rejoin       time.Duration // how often missing seeds are joined again
	Reclaim      time.Duration // after how long a dead node's name may come back from a new address
	// Lease is how long a majority's grant lets a node serve (see Lease);
	// requests for grants go out five times a term.
	Lease time.Duration
}

// DefaultTiming is tuned for a LAN or one machine: a crashed node is
// declared dead about 2 to 2.5 s after it stops answering (a probe every
// 500 ms, then 3 × 500 ms of suspicion, for up to 10 members; about 3.5 s
// at 100). memberlist's default would let a suspicion last up to 6 times
// longer while no third member confirms it, which in a 3-node cluster
// made detection take 3.5 s here. A graceful leave is seen at once.
func DefaultTiming() Timing {
	return Timing{
		Probe: 500 * time.Millisecond, ProbeTimeout: 250 * time.Millisecond, Suspicion: 3, SuspicionMax: 1,
		Gossip: 100 * time.Millisecond, PushPull: 15 * time.Second, Rejoin: time.Second,
		Reclaim: 5 * time.Second, Lease: time.Second,
	}
}

// TestTiming makes tests fast: a death is seen in about 0.5 to 1 s.
func TestTiming() Timing {
	return Timing{
		Probe: 200 * time.Millisecond, ProbeTimeout: 100 * time.Millisecond, Suspicion: 2, SuspicionMax: 2,
		Gossip: 50 * time.Millisecond, PushPull: 2 * time.Second, Rejoin: 500 * time.Millisecond,
		Reclaim: time.Second, Lease: time.Second,
	}
}

// DefaultBindAddr is the gossip address when none is given, on loopback
// like the RESP port.
const DefaultBindAddr = "127.0.0.1:7946"

func (cfg *Config) withDefaults() error {
	switch {
	case cfg.NodeName == "":
		return errors.New("cluster: a node name is required")
	case len(cfg.NodeName) > 128 || strings.ContainsAny(cfg.NodeName, " \r\n"):
		return errors.New("cluster: a node name is at most 128 bytes, with no spaces or newlines")
	case cfg.RESPAddr == "":
		return errors.New("cluster: the node's RESP address is required")
	case strings.Contains(cfg.RESPAddr+cfg.TLSAddr, " "):
		return errors.New("cluster: a node's addresses have no spaces")
	}
	if cfg.BindAddr == "" {
		cfg.BindAddr = DefaultBindAddr
	}
	if cfg.Timing == (Timing{}) {
		cfg.Timing = DefaultTiming()
	}
	if cfg.Timing.Lease <= 0 {
		cfg.Timing.Lease = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for _, k := range cfg.Keys {
		if n := len(k); n != 16 && n != 24 && n != 32 {
			return fmt.Errorf("cluster: a gossip key is 16, 24 or 32 bytes, not %d", n)
		}
	}
	return nil
}

// ParseKey decodes a gossip key written in base64 (as `openssl rand -base64 32` prints it).
func ParseKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("cluster: the key is not base64: %w", err)
	}
	if n := len(k); n != 16 && n != 24 && n != 32 {
		return nil, fmt.Errorf("cluster: a key is 16, 24 or 32 bytes, not %d", n)
	}
	return k, nil
}

// ReadKeyring reads a keyring file: one base64 key per line, the first the
// one that encrypts, the others still accepted (to rotate keys without a
// restart of every node at once). Blank lines and # comments are skipped.
func ReadKeyring(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys [][]byte
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, err := ParseKey(line)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no keys", path)
	}
	return keys, nil
}

// splitHostPort is net.SplitHostPort with the port as a number.
func splitHostPort(addr string) (string, int, error) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := net.LookupPort("tcp", p)
	return h, port, err
}
