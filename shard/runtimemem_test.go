package shard

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestMeasureRuntimeMemory fills a Map as loadtest/memrss.sh fills the
// server (1M keys like user:1000001:api over 256 shards, RL.SLIDE 100 60,
// each hit twice) and logs, per key, what the store accounts for and how
// the runtime's memory classes grew: heap objects, free slots in spans, GC
// metadata. It is opt-in (RLSTORE_MEASURE=1), like TestMeasureMemory.
func TestMeasureRuntimeMemory(t *testing.T) {
	if os.Getenv("RLSTORE_MEASURE") == "" {
		t.Skip("set RLSTORE_MEASURE=1 to measure")
	}
	const n = 1_000_000
	before := memoryClasses()
	m := newMap(t, Config{Shards: 256})
	p := slideP(100, time.Minute)
	var key []byte
	for hit := range int64(2) {
		for i := range n {
			key = fmt.Appendf(key[:0], "user:%07d:api", 1_000_000+i)
			_, err := m.Decide(key, p, t0+hit*sec, 1, false)
			require.NoError(t, err)
		}
	}
	after := memoryClasses()
	var slotB, keyB, indexB int
	for _, s := range m.shards {
		slotB += s.slots.bytes()
		keyB += s.keys.size
		indexB += s.index.bytes()
	}
	perKey := func(b int) float64 { return float64(b) / n }
	t.Logf("Stats().Bytes %.2f B/key: slots %.2f, key bytes %.2f, index %.2f",
		perKey(int(m.Stats().Bytes)), perKey(slotB), perKey(keyB), perKey(indexB))
	for _, name := range []string{"heap/objects", "heap/unused", "metadata/mspan/inuse", "metadata/mspan/free", "metadata/other", "other"} {
		name = "/memory/classes/" + name + ":bytes"
		t.Logf("%-45s %6.2f B/key", name, perKey(int(after[name])-int(before[name])))
	}
	runtime.KeepAlive(m)
}

// memoryClasses collects garbage, returns free memory to the OS, and reads
// the runtime's memory classes.
func memoryClasses() map[string]uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var s []metrics.Sample
	for _, d := range metrics.All() {
		if d.Kind == metrics.KindUint64 && strings.HasPrefix(d.Name, "/memory/classes/") {
			s = append(s, metrics.Sample{Name: d.Name})
		}
	}
	metrics.Read(s)
	v := make(map[string]uint64, len(s))
	for _, x := range s {
		v[x.Name] = x.Value.Uint64()
	}
	return v
}
