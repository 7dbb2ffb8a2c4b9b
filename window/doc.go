// Package window holds rlstore's rate-limit algorithms as pure functions of (state, now, params, cost).
package window
