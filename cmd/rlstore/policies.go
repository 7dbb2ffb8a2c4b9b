package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/rlstore/rlstore/persistence"
)

// openPolicies opens the durable policy store in --data-dir. With no
// --data-dir it returns nil: RL.POLICY SET then keeps policies in memory only,
// and a restart forgets them.
func openPolicies(cfg config, log *slog.Logger) (*persistence.Policies, error) {
	if cfg.DataDir == "" {
		log.Warn("policies are in memory only: no --data-dir, so RL.POLICY SET does not survive a restart")
		return nil, nil
	}
	p, warns, err := persistence.OpenPolicies(cfg.DataDir)
	for _, w := range warns {
		log.Warn("truncated a torn last policy record left by a crash", "file", filepath.Join(cfg.DataDir, w.File),
			"offset", w.Offset, "dropped_bytes", w.Dropped, "reason", w.Reason)
	}
	if cerr := (*persistence.CorruptError)(nil); errors.As(err, &cerr) {
		return nil, fmt.Errorf("refusing to start: %s is corrupt at byte %d (%s). Restore --data-dir from a "+
			"backup, or move that file aside to start without its policies",
			filepath.Join(cfg.DataDir, cerr.File), cerr.Offset, cerr.Reason)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the policies in --data-dir %s: %w", cfg.DataDir, err)
	}
	log.Info("loaded policies", "data_dir", cfg.DataDir, "policies", len(p.List()))
	return p, nil
}

func closePolicies(p *persistence.Policies) error {
	if p == nil {
		return nil
	}
	return p.Close()
}
