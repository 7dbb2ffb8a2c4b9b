package server

import "github.com/rlstore/rlstore/window"

// The errors of RL.FIXED's ANCHOR option.
const (
	errArgAnchorKind   argError = "ERR ANCHOR applies to RL.FIXED only"
	errAnchorNotGlobal argError = "ERR ANCHOR FIRST cannot be global: global FIXED windows are aligned to the epoch; use ANCHOR EPOCH or mark the key LOCAL"
)

// parseAnchor reads the value of ANCHOR into p: FIRST starts each window at
// its first admission (window.Fixed's FirstHit), EPOCH aligns windows to
// multiples of the window since the Unix epoch (the default).
func parseAnchor(v []byte, p *window.Params) error {
	if p.Kind != window.KindFixed {
		return errArgAnchorKind
	}
	switch {
	case equalFoldASCII(v, "first"):
		p.FirstHit = true
	case equalFoldASCII(v, "epoch"):
		p.FirstHit = false
	default:
		return errArgSyntax
	}
	return nil
}
