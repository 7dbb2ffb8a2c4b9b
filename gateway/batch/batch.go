// Package batch is the seam between the gateway and the store: the requests of one ShouldRateLimit call, decided together.
package batch

import (
	"context"
	"time"
)

// Kind says how a request is decided.
type Kind uint8

// The kinds. Count is envoyproxy/ratelimit's fixed window: every hit is
// counted, denied or not, and the caller compares the count with its limit.
// The others are rlstore's algorithms, which decide and never count a
// denied request.
const (
	Count Kind = iota
	Fixed
	Slide
	Token
	Log
	Leaky
)

// Request is one key's decision.
type Request struct {
	Key    []byte
	Kind   Kind
	Limit  int64         // the limit, or a bucket's capacity (and its refill per Window)
	Window time.Duration // whole seconds
	Hits   int64         // units to charge; 0 asks without charging
}

// Result is a request's answer. For Count, Count is the units counted in
// the window after this request and the other fields are zero.
type Result struct {
	Allowed   bool
	Count     int64
	Remaining int64
	Reset     time.Duration // until the key is back to its full limit
	Err       error         // the store refused this one request (full, wrong type, unreachable owner)
}

// Decider decides a batch. The requests are sent together, so that a
// cluster sends each owner its share in one round trip; out has one
// Result per request. A returned error fails the whole batch.
// Implementations are safe for concurrent use.
type Decider interface {
	Decide(ctx context.Context, reqs []Request, out []Result) error
}
