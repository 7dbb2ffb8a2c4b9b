package loadtest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is a server's footprint before and after a run.
type Memory struct {
	Source      string  `json:"source"` // "/proc VmRSS" or "INFO used_memory_rss"
	RSSBefore   int64   `json:"rss_before"`
	RSSAfter    int64   `json:"rss_after"`
	KeysBefore  int64   `json:"keys_before"`
	KeysAfter   int64   `json:"keys_after"`
	BytesPerKey float64 `json:"bytes_per_key"`
}

// Snapshot is one reading of a server's memory and key count.
type Snapshot struct {
	RSS    int64
	Keys   int64
	Source string
}

// TakeSnapshot reads the server's RSS, from /proc/<pid>/status when pid > 0
// (a server this process started) and from INFO memory otherwise, and its key
// count from DBSIZE.
func TakeSnapshot(ctx context.Context, cl *Client, pid int) (Snapshot, error) {
	var s Snapshot
	var err error
	if pid > 0 {
		s.Source = "/proc VmRSS"
		s.RSS, err = procRSS(pid)
	} else {
		s.Source = "INFO used_memory_rss"
		s.RSS, err = infoRSS(ctx, cl)
	}
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

// Between turns two snapshots into the memory a run's keys took.
func Between(before, after Snapshot) Memory {
	m := Memory{
		Source:    after.Source,
		RSSBefore: before.RSS, RSSAfter: after.RSS,
		KeysBefore: before.Keys, KeysAfter: after.Keys,
	}
	if d := after.Keys - before.Keys; d > 0 {
		m.BytesPerKey = float64(after.RSS-before.RSS) / float64(d)
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

func infoRSS(ctx context.Context, cl *Client) (int64, error) {
	rep, err := cl.DoOK(ctx, "INFO", "memory")
	if err != nil {
		return 0, err
	}
	v, ok := InfoField(string(rep.Str), "used_memory_rss")
	if !ok {
		return 0, fmt.Errorf("loadtest: INFO memory has no used_memory_rss")
	}
	return strconv.ParseInt(v, 10, 64)
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
