package decide

// The names of the decision commands that are not native ones (those are
// "rl." and their window kind, NativeName). Their table entries, their
// arity errors and their metrics' labels all take the name from here, so a
// command is named in one place.
const (
	nameThrottle = "cl.throttle"
	nameCheck    = "rl.check"
	nameGCRA     = "gcra"
	nameTHROTTLE = "throttle" // throttlecrab's, not redis-cell's cl.throttle
	nameAcquire  = "rl.acquire"
	nameReserve  = "rl.reserve"
	nameRenew    = "rl.renew"
	nameRelease  = "rl.release"
	nameCommit   = "rl.commit"
	nameCancel   = "rl.cancel"
	nameRefund   = "rl.refund"
)
