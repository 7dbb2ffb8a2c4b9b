package proc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// Memory is a server's footprint before and after a run.
type Memory struct {
	Source      string  `json:"source"` // where RSS came from: "/proc VmRSS" or "INFO used_memory_rss"
	Basis       string  `json:"basis"`  // what BytesPerKey divides: "RSS" or "used_memory"
	RSSBefore   int64   `json:"rss_before"`
	RSSAfter    int64   `json:"rss_after"`
	UsedBefore  int64   `json:"used_before,omitempty"`
	UsedAfter   int64   `json:"used_after,omitempty"`
	KeysBefore  int64   `json:"keys_before"`
	KeysAfter   int64   `json:"keys_after"`
	KeysSent    int64   `json:"keys_sent,omitempty"` // keys a fill created; more than the DBSIZE growth means some expired
	BytesPerKey float64 `json:"bytes_per_key"`
}

// Expired reports whether keys a fill created had already expired when it
// was measured, which makes BytesPerKey too high.
func (m *Memory) Expired() bool {
	return m.KeysSent > 0 && m.KeysAfter-m.KeysBefore < m.KeysSent*99/100
}

// Snapshot is one reading of a server's memory and key count.
type Snapshot struct {
	RSS    int64
	Used   int64 // INFO used_memory, 0 when the server does not report it
	Keys   int64
	Source string
}

// TakeSnapshot reads the server's RSS, from /proc/<pid>/status when pid > 0
// (a server this process started) and from INFO memory otherwise, its
// used_memory when INFO reports it, and its key count from DBSIZE.
func TakeSnapshot(ctx context.Context, cl *resp.Client, pid int) (Snapshot, error) {
	s, err := memorySnapshot(ctx, cl, pid)
	if err != nil {
		return s, err
	}
	rep, err := cl.DoOK(ctx, "DBSIZE")
	if err != nil {
		return s, err
	}
	s.Keys = rep.Int
	return s, nil
}

// memorySnapshot needs INFO memory only when there is no /proc to read.
func memorySnapshot(ctx context.Context, cl *resp.Client, pid int) (Snapshot, error) {
	rss, used, err := infoMemory(ctx, cl)
	if pid <= 0 {
		return Snapshot{RSS: rss, Used: used, Source: "INFO used_memory_rss"}, err
	}
	s := Snapshot{Used: used, Source: "/proc VmRSS"}
	s.RSS, err = procRSS(pid)
	return s, err
}

// Between turns two snapshots into the memory a run's keys took. RSS of a
// process we started fresh is the honest measure; a long-running server
// keeps freed pages, so its RSS delta can be anything, and the allocator's
// used_memory is used instead when the server reports it.
func Between(before, after Snapshot) Memory {
	m := Memory{
		Source: after.Source, Basis: "RSS",
		RSSBefore: before.RSS, RSSAfter: after.RSS,
		UsedBefore: before.Used, UsedAfter: after.Used,
		KeysBefore: before.Keys, KeysAfter: after.Keys,
	}
	grew := after.RSS - before.RSS
	if after.Source != "/proc VmRSS" && before.Used > 0 && after.Used > 0 {
		m.Basis, grew = "used_memory", after.Used-before.Used
	}
	if d := after.Keys - before.Keys; d > 0 {
		m.BytesPerKey = float64(grew) / float64(d)
	}
	return m
}

func procRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("loadtest: read RSS: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "VmRSS:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("loadtest: no VmRSS for pid %d", pid)
}

// infoMemory reads used_memory_rss, which it requires, and used_memory,
// which it does not.
func infoMemory(ctx context.Context, cl *resp.Client) (rss, used int64, err error) {
	rep, err := cl.DoOK(ctx, "INFO", "memory")
	if err != nil {
		return 0, 0, err
	}
	info := string(rep.Str)
	v, ok := InfoField(info, "used_memory_rss")
	if !ok {
		return 0, 0, fmt.Errorf("loadtest: INFO memory has no used_memory_rss")
	}
	if rss, err = strconv.ParseInt(v, 10, 64); err != nil {
		return 0, 0, err
	}
	if v, ok := InfoField(info, "used_memory"); ok {
		used, _ = strconv.ParseInt(v, 10, 64)
	}
	return rss, used, nil
}

// InfoField returns the value of field in an INFO reply.
func InfoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if ok && k == field {
			return v, true
		}
	}
	return "", false
}
