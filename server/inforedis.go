package server

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlstore/rlstore/server/internal/core"
)

// The INFO fields Redis 7 has that tools read (redis_exporter, RedisInsight,
// redis-cli --stat), with Redis's meanings: TestInfoFieldsMatchRedis holds
// every field to a field of Redis's or to the rl_ prefix.

// infoExtra is the server's state behind them.
type infoExtra struct {
	runID string // 40 hex characters, new at every start, as Redis's run_id

	netIn, netOut atomic.Int64 // bytes read from and written to clients that have gone

	hits, misses atomic.Int64 // keys found and not found by the keyspace's reads

	errMu  sync.Mutex       // guards errors
	errors map[string]int64 // error replies by their first word (ERR, WRONGPASS, …)

	ops opsMeter

	ttlCursor atomic.Uint64 // where the next avg_ttl sample starts, so that samples walk the keyspace
}

func newRunID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// maxErrorKinds bounds errorstats, as Redis bounds it at 128 kinds.
const maxErrorKinds = 128

// countError counts an error reply under its first word, as Redis's errorstats does.
func (x *infoExtra) countError(msg string) {
	kind, _, _ := strings.Cut(msg, " ")
	x.errMu.Lock()
	defer x.errMu.Unlock()
	if x.errors == nil {
		x.errors = map[string]int64{}
	}
	if _, ok := x.errors[kind]; !ok && len(x.errors) >= maxErrorKinds {
		kind = "ERR" // past the bound, counted with the generic kind
	}
	x.errors[kind]++
}

// errorStats returns errorstats' pairs sorted by kind, and their total.
func (x *infoExtra) errorStats() ([]core.Pair, int64) {
	x.errMu.Lock()
	defer x.errMu.Unlock()
	var ps []core.Pair
	var total int64
	for k, n := range x.errors {
		ps = append(ps, core.Pair{Key: "errorstat_" + k, Val: "count=" + strconv.FormatInt(n, 10)})
		total += n
	}
	slices.SortFunc(ps, func(a, b core.Pair) int { return strings.Compare(a.Key, b.Key) })
	return ps, total
}

func (s *Server) infoErrorStats() []core.Pair {
	ps, _ := s.info.errorStats()
	return ps
}

// opsMeter is instantaneous_ops_per_sec as Redis computes it: the commands
// per second of each 100 ms or so, averaged over the last 16 samples.
type opsMeter struct {
	mu      sync.Mutex // guards the fields below
	at      time.Time  // the last sample's time
	n       int64      // commands processed then
	samples [16]float64
	i, full int
}

func (m *opsMeter) sample(now time.Time, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.at.IsZero() && now.After(m.at) {
		m.samples[m.i] = float64(n-m.n) / now.Sub(m.at).Seconds()
		m.i = (m.i + 1) % len(m.samples)
		m.full = min(m.full+1, len(m.samples))
	}
	m.at, m.n = now, n
}

func (m *opsMeter) perSecond() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.full == 0 {
		return 0
	}
	sum := 0.0
	for _, v := range m.samples[:m.full] {
		sum += v
	}
	return int64(sum/float64(m.full) + 0.5)
}

// netBytes sums the bytes read from and written to every client, live or gone.
func (s *Server) netBytes() (in, out int64) {
	in, out = s.info.netIn.Load(), s.info.netOut.Load()
	s.mu.Lock()
	for _, c := range s.clients {
		in += c.rc.NetIn()
		out += c.rc.NetOut()
	}
	s.mu.Unlock()
	return in, out
}

// hz is the sweeps a second, Redis's hz: how often background work runs.
func (s *Server) hz() int64 { return int64(time.Second / s.cfg.SweepInterval) }

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// avgTTLSample is how many keys one INFO keyspace looks at for avg_ttl,
// in at most avgTTLScans steps of a SCAN.
const (
	avgTTLSample = 64
	avgTTLScans  = 64
)

// avgTTL estimates the keys' mean time to live in milliseconds from a
// sample, as Redis's avg_ttl is an estimate from the keys its expiry cycle
// samples; successive calls sample further along the keyspace.
func (s *Server) avgTTL(now int64) int64 {
	var keys [][]byte
	cursor := s.info.ttlCursor.Load()
	for range avgTTLScans { // SCAN's count is of slots visited, not keys found
		keys, cursor = s.cfg.Store.Scan(keys, cursor, avgTTLSample)
		if len(keys) >= avgTTLSample || cursor == 0 {
			break
		}
	}
	s.info.ttlCursor.Store(cursor)
	var sum, n int64
	for _, k := range keys {
		if _, exp, live := s.lookup(k, now); live {
			sum += (exp - now) / int64(time.Millisecond)
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / n
}
