package main

import (
	"errors"
	"flag"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// replicaFlags are the replicas' options (--replicas, --replica-interval).
type replicaFlags struct {
	Count    int
	Interval time.Duration
}

func (f *replicaFlags) define(fs *flag.FlagSet) {
	fs.IntVar(&f.Count, "replicas", 1, "`0|1`: with 1, each cluster slot's owner ships its changed keys to the slot's runner-up every --replica-interval, which takes the slot over with them if the owner crashes; 0: a crashed owner's keys restart from zero. Only with --cluster-addr or --join")
	fs.Var(newSeconds(&f.Interval, server.DefaultReplicaInterval), "replica-interval", "`duration` between shipments to the backups (100ms): an owner's crash loses at most this much of each key's decisions")
}

func (f replicaFlags) validate() error {
	switch {
	case f.Count != 0 && f.Count != 1:
		return errors.New("--replicas must be 0 or 1")
	case f.Interval <= 0:
		return errors.New("--replica-interval must be positive")
	}
	return nil
}

// replicaConfig returns the server's replica setup, nil with --replicas 0:
// the changes of store come from the log's feed when there is a data dir,
// from a feed of their own otherwise; copies live in a Map of their own,
// with the same --maxmemory and --max-keys as store. The node gives it
// connections of its own for the shipments, dialled and checked as
// forwards are (the cluster's secret, --tls-cluster).
func replicaConfig(c config, store *shard.Map, dur *persistence.Store) (*server.ReplicaConfig, error) {
	if c.Replicas.Count == 0 {
		return nil, nil
	}
	copies, err := shard.New(c.shardConfig())
	if err != nil {
		return nil, err
	}
	var f *persistence.Feed
	if dur != nil {
		f = dur.Feed()
	} else {
		f = persistence.NewFeed(store) // no data dir: the shipper alone drains
	}
	return &server.ReplicaConfig{Feed: f, Copies: copies, Interval: c.Replicas.Interval}, nil
}
