package decide

import (
	"errors"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/shard"
)

// Store errors as Redis words them.
const (
	ErrWrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	ErrOOM       = "OOM command not allowed when used memory > 'maxmemory'."
)

// The argument errors every decision command shares. An argument error is
// a policy.Error: a string type, so that each is a constant and an error
// path allocates nothing.
const (
	ErrReserved policy.Error = "ERR keys starting with \\xffp are reserved for policy state"
	ErrCost     policy.Error = "ERR cost must be at least 1"
	errNotInt                = policy.ErrNotInt
	errSyntax                = policy.ErrSyntax
)

// Reply words a store error, or an argument error, as a reply.
func Reply(err error) string {
	var ae policy.Error
	switch {
	case errors.Is(err, shard.ErrWrongType):
		return ErrWrongType
	case errors.Is(err, shard.ErrFull):
		return ErrOOM
	case errors.As(err, &ae):
		return string(ae)
	}
	return "ERR " + err.Error() // parsing already rejects what the store would
}
