package loadtest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
)

// Key distributions.
const (
	DistUniform = "uniform" // every key equally likely
	DistZipf    = "zipf"    // a few hot keys take most requests
	DistHot     = "hot"     // every request on one key
	DistSeq     = "seq"     // each key in turn, to fill a keyspace once
)

// KeySpec says which keys a workload touches.
type KeySpec struct {
	Prefix string  // prepended to the key number
	N      uint64  // keyspace size
	Dist   string  // one of the Dist constants
	ZipfS  float64 // zipf exponent, > 1
}

// Validate reports whether the spec can generate keys.
func (s KeySpec) Validate() error {
	if s.N == 0 {
		return fmt.Errorf("loadtest: keyspace must hold at least one key")
	}
	switch s.Dist {
	case DistUniform, DistHot, DistSeq:
		return nil
	case DistZipf:
		if s.ZipfS <= 1 {
			return fmt.Errorf("loadtest: zipf exponent %v must be > 1", s.ZipfS)
		}
		return nil
	}
	return fmt.Errorf("loadtest: unknown key distribution %q", s.Dist)
}

// picker returns the key-number source for worker w of n; seed makes it
// reproducible. Seq workers interleave so that n of them cover the keyspace.
func (s KeySpec) picker(w, n int, seed uint64) func() uint64 {
	r := rand.New(rand.NewPCG(seed, uint64(w)))
	switch s.Dist {
	case DistHot:
		return func() uint64 { return 0 }
	case DistZipf:
		z := rand.NewZipf(r, s.ZipfS, 1, s.N-1)
		return z.Uint64
	case DistSeq:
		next := uint64(w)
		return func() uint64 {
			k := next % s.N
			next += uint64(n)
			return k
		}
	}
	return func() uint64 { return r.Uint64N(s.N) }
}

// AppendKey appends the name of key number k to dst.
func (s KeySpec) AppendKey(dst []byte, k uint64) []byte {
	dst = append(dst, s.Prefix...)
	return strconv.AppendUint(dst, k, 10)
}
