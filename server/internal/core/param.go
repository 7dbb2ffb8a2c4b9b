package core

import (
	"strconv"

	"github.com/rlstore/rlstore/policy"
)

// Param is one parameter CONFIG GET shows, declared by the concern whose
// state it reads: Get reads it, and for a parameter CONFIG SET may change,
// Check returns why a value is refused (or "") and Set applies one that
// Check passed. Check and Set are nil for a read-only one.
type Param struct {
	Name  string
	Get   func() string
	Check func(v []byte) string
	Set   func(v []byte)
}

// CheckIntAtLeast is a Param's Check that takes an integer of at least lo.
func CheckIntAtLeast(lo int64) func(v []byte) string {
	return func(v []byte) string {
		if n, ok := policy.ParseInt(v); !ok || n < lo {
			return "argument must be an integer of at least " + strconv.FormatInt(lo, 10)
		}
		return ""
	}
}
