package window

import (
	"errors"
	"time"
)

// Never is the Wait of a request that can never be admitted (its cost exceeds the limit).
const Never time.Duration = -1

// Decision is the outcome of one request. Being limited is a result, not an error.
type Decision struct {
	Allowed   bool
	Limit     int64         // the limit or capacity in force
	Remaining int64         // units a request could still take now (after this one, if admitted)
	Wait      time.Duration // denied: time until the same request fits, or Never; admitted: 0 (Leaky: its delay)
	Reset     time.Duration // time until the key is back to its full limit
}

// Sentinel errors for parameters that no algorithm can honour.
var (
	ErrLimit  = errors.New("window: limit out of range")
	ErrWindow = errors.New("window: window out of range")
	ErrRate   = errors.New("window: rate out of range")
	ErrCost   = errors.New("window: cost out of range")
	ErrKind   = errors.New("window: unknown algorithm")
	ErrState  = errors.New("window: state no Decide could have made")
)
