package loadtest

import (
	"fmt"
	"io"
	"time"
)

// Config describes one load run. Every default is set by the caller (the
// rlload command); Validate rejects what cannot run.
type Config struct {
	Addr     string   // loopback host:port
	Workload Workload // the command to send
	Keys     KeySpec  // which keys it touches

	Conns    int           // connections, each with its own worker
	Pipeline int           // commands written before reading their replies
	Requests int64         // stop after this many requests; 0 for no bound
	Duration time.Duration // stop after this long; 0 for no bound

	// Cluster makes each worker a cluster-aware client: it reads the slot
	// map from Addr and sends each request to its key's owner, over a
	// connection per node (so Conns × nodes connections in all). Each
	// pipeline of Pipeline requests goes to one node, with keys it owns
	// (see router), unless ClusterSplit splits each pipeline per node.
	Cluster      bool
	ClusterSplit bool

	// Rate, when positive, runs an open loop: requests are due at this many
	// per second in total, and latency counts from when each was due, so a
	// stalled server is charged for the queue it causes.
	Rate float64

	Check    bool          // record every request for the accuracy check
	Slack    time.Duration // clock uncertainty the check allows
	Progress io.Writer     // once a second a progress line; nil for none
	Seed     uint64        // makes key choices reproducible
}

// Validate reports whether the run is well defined and bounded.
func (c Config) Validate() error {
	switch {
	case c.Conns < 1:
		return fmt.Errorf("loadtest: need at least one connection, have %d", c.Conns)
	case c.Pipeline < 1:
		return fmt.Errorf("loadtest: pipeline depth %d must be at least 1", c.Pipeline)
	case c.Requests < 0 || c.Duration < 0 || c.Rate < 0:
		return fmt.Errorf("loadtest: requests, duration and rate must not be negative")
	case c.Requests == 0 && c.Duration == 0:
		return fmt.Errorf("loadtest: a run needs a request count, a duration or both")
	case c.Check && c.Workload.Rule == nil:
		return fmt.Errorf("loadtest: workload %s has no limit to check (give --rule with --cmd)", c.Workload.Name)
	case c.Cluster && c.Rate > 0:
		return fmt.Errorf("loadtest: --cluster runs a closed loop only")
	case c.ClusterSplit && !c.Cluster:
		return fmt.Errorf("loadtest: --cluster-split needs --cluster")
	case len(c.Workload.Args) == 0:
		return fmt.Errorf("loadtest: no command to send")
	}
	return c.Keys.Validate()
}
