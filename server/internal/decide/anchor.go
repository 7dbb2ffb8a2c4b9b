package decide

import (
	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/window"
)

// The errors of RL.FIXED's ANCHOR option.
const (
	errArgAnchorKind   policy.Error = "ERR ANCHOR applies to RL.FIXED only"
	ErrAnchorNotGlobal policy.Error = "ERR ANCHOR FIRST cannot be global: global FIXED windows are aligned to the epoch; use ANCHOR EPOCH or mark the key LOCAL"
)

// parseAnchor reads the value of ANCHOR into p: FIRST starts each window at
// its first admission (window.Fixed's FirstHit), EPOCH aligns windows to
// multiples of the window since the Unix epoch (the default).
func parseAnchor(v []byte, p *window.Params) error {
	if p.Kind != window.KindFixed {
		return errArgAnchorKind
	}
	switch {
	case core.EqualFold(v, "first"):
		p.FirstHit = true
	case core.EqualFold(v, "epoch"):
		p.FirstHit = false
	default:
		return errSyntax
	}
	return nil
}
