package loadtest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
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

// pickers returns one key-number source per worker; seed makes them
// reproducible. Seq workers share one counter, so that together they visit
// every key once before any key twice, however the requests fall.
func (s KeySpec) pickers(workers int, seed uint64) []func() uint64 {
	out := make([]func() uint64, workers)
	var next atomic.Uint64
	for w := range out {
		out[w] = s.picker(w, seed, &next)
	}
	return out
}

func (s KeySpec) picker(w int, seed uint64, next *atomic.Uint64) func() uint64 {
	r := rand.New(rand.NewPCG(seed, uint64(w)))
	switch s.Dist {
	case DistHot:
		return func() uint64 { return 0 }
	case DistZipf:
		z := rand.NewZipf(r, s.ZipfS, 1, s.N-1)
		return z.Uint64
	case DistSeq:
		return func() uint64 { return (next.Add(1) - 1) % s.N }
	}
	return func() uint64 { return r.Uint64N(s.N) }
}

// AppendKey appends the name of key number k to dst.
func (s KeySpec) AppendKey(dst []byte, k uint64) []byte {
	dst = append(dst, s.Prefix...)
	return strconv.AppendUint(dst, k, 10)
}
