package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/server"
	"github.com/rlstore/rlstore/shard"
)

// openDurability loads --data-dir into store and starts logging its changes.
// With no --data-dir it returns nil: state lives in memory only. A torn last
// record is logged as a warning and the start goes on; any other damage stops
// the start with an error naming the file and offset.
func openDurability(cfg config, store *shard.Map, pols *persistence.Policies, log *slog.Logger) (*persistence.Store, error) {
	if cfg.DataDir == "" {
		log.Warn("persistence is off: no --data-dir, so all state is in memory and a restart resets every limit")
		return nil, nil
	}
	fsync, err := persistence.ParseFsync(cfg.AppendFsync)
	if err != nil {
		return nil, err // loadConfig checked it
	}
	opts := cfg.persistenceOptions(fsync, log)
	if pols != nil {
		opts.DirRecreated = func() { // the policy file went with the directory
			if err := pols.Repair(); err != nil {
				log.Error("rewriting the policy file in the recreated data dir failed", "err", err)
			}
		}
	}
	st, rec, err := persistence.Open(cfg.DataDir, store, opts)
	for _, w := range rec.Warnings {
		log.Warn("truncated a torn last record left by a crash", "file", filepath.Join(cfg.DataDir, w.File),
			"offset", w.Offset, "dropped_bytes", w.Dropped, "reason", w.Reason)
	}
	if cerr := (*persistence.CorruptError)(nil); errors.As(err, &cerr) {
		return nil, fmt.Errorf("refusing to start: %s is corrupt at byte %d (%s). Restore --data-dir from a "+
			"backup, or move that file aside to start from the rest, losing what it held",
			filepath.Join(cfg.DataDir, cerr.File), cerr.Offset, cerr.Reason)
	}
	if err != nil {
		return nil, fmt.Errorf("opening --data-dir %s: %w", cfg.DataDir, err)
	}
	log.Info("loaded data dir", "data_dir", cfg.DataDir, "keys", rec.Keys, "took", rec.Duration,
		"snapshot", rec.Snapshot, "log_segments", len(rec.Logs), "log_records", rec.Records,
		"appendfsync", fsync.String(), "save_interval", cfg.SaveInterval)
	return st, nil
}

func (c config) persistenceOptions(fsync persistence.FsyncMode, log *slog.Logger) persistence.Options {
	every := c.SaveInterval
	if every == 0 {
		every = -1 // only on SAVE, BGSAVE, shutdown, or once the log outgrows the snapshot
	}
	return persistence.Options{Fsync: fsync, SnapshotInterval: every, Logger: log}
}

// durability is st as the server takes it: a nil *Store must become a nil
// interface, or the server would think persistence is on.
func durability(st *persistence.Store) server.Durability {
	if st == nil {
		return nil
	}
	return st
}

// closeDurability writes and fsyncs the log and releases the data dir.
func closeDurability(st *persistence.Store, log *slog.Logger) error {
	if st == nil {
		return nil
	}
	if err := st.Close(); err != nil {
		return fmt.Errorf("closing the data dir: %w", err)
	}
	log.Info("data dir closed: the log is written and fsynced")
	return nil
}
