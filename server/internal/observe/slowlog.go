package observe

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Redis's bounds on what a slow-log entry keeps of a command.
const (
	slowlogMaxArgs    = 32
	slowlogMaxArgSize = 128
)

// SlowEntry is one SLOWLOG GET entry.
type SlowEntry struct {
	ID         int64
	At         int64 // unix seconds
	Usec       int64
	Args       []string
	Addr, Name string
}

// Spike is the latency monitor's one event, "command", as LATENCY LATEST
// shows it; At is 0 while none was seen.
type Spike struct {
	At, LatestMs, MaxMs int64
}

// Slowlog keeps the slowest commands' entries, newest first, and the
// latency monitor's spike. Only a command slower than a threshold takes
// its lock, so the fast path is two atomic loads (Slow and Spiked). The zero value logs every
// command and keeps no entry; it is safe for use by many goroutines.
type Slowlog struct {
	SlowerThan atomic.Int64 // nanoseconds; < 0 disables the log, 0 logs every command
	MaxLen     atomic.Int64
	LatencyMs  atomic.Int64 // latency monitor threshold in ms; 0 disables it

	mu      sync.Mutex  // guards the fields below
	entries []SlowEntry // newest first
	nextID  int64
	latest  Spike
}

// Slow reports whether a command that took d goes into the log.
func (sl *Slowlog) Slow(d time.Duration) bool {
	t := sl.SlowerThan.Load()
	return t >= 0 && int64(d) >= t
}

// Add logs a command that took d, run by the client at addr called name.
// Of a secret command (its arguments may be passwords) it keeps only the
// name, as Redis does.
func (sl *Slowlog) Add(args [][]byte, secret bool, d time.Duration, addr, name string) {
	e := SlowEntry{At: time.Now().Unix(), Usec: d.Microseconds(), Args: slowArgs(args, secret), Addr: addr, Name: name}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	e.ID = sl.nextID
	sl.nextID++
	n := int(min(sl.MaxLen.Load(), int64(1<<20)))
	sl.entries = append([]SlowEntry{e}, sl.entries[:min(len(sl.entries), max(n-1, 0))]...)
	if n == 0 {
		sl.entries = sl.entries[:0]
	}
}

// Spiked reports whether a command that took d is a spike for the latency
// monitor.
func (sl *Slowlog) Spiked(d time.Duration) bool {
	t := sl.LatencyMs.Load()
	return t > 0 && d.Milliseconds() >= t
}

// AddSpike counts a command that took d as a spike.
func (sl *Slowlog) AddSpike(d time.Duration) {
	ms := d.Milliseconds()
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.latest = Spike{At: time.Now().Unix(), LatestMs: ms, MaxMs: max(sl.latest.MaxMs, ms)}
}

// slowArgs copies what Redis keeps of a command: 32 arguments, each cut at
// 128 bytes, with the rest summarised; of a secret one, only its name.
func slowArgs(args [][]byte, secret bool) []string {
	if secret {
		return []string{string(args[0]), "(redacted)"}
	}
	n := min(len(args), slowlogMaxArgs)
	out := make([]string, 0, n)
	for i, a := range args[:n] {
		if i == slowlogMaxArgs-1 && len(args) > slowlogMaxArgs {
			out = append(out, "... ("+strconv.Itoa(len(args)-slowlogMaxArgs+1)+" more arguments)")
			break
		}
		if len(a) > slowlogMaxArgSize {
			out = append(out, string(a[:slowlogMaxArgSize])+"... ("+strconv.Itoa(len(a)-slowlogMaxArgSize)+" more bytes)")
			continue
		}
		out = append(out, string(a))
	}
	return out
}

// Entries returns a copy of the newest n entries; n < 0: all.
func (sl *Slowlog) Entries(n int64) []SlowEntry {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	es := sl.entries
	if n >= 0 && int(n) < len(es) {
		es = es[:n]
	}
	return append([]SlowEntry(nil), es...)
}

// Len returns the number of entries.
func (sl *Slowlog) Len() int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return len(sl.entries)
}

// Reset empties the log.
func (sl *Slowlog) Reset() {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.entries = nil
}

// Latest returns the latest spike.
func (sl *Slowlog) Latest() Spike {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.latest
}

// ResetLatency forgets the spikes, and returns how many events it reset.
func (sl *Slowlog) ResetLatency() int {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	n := 0
	if sl.latest.At != 0 {
		n = 1
	}
	sl.latest = Spike{}
	return n
}
