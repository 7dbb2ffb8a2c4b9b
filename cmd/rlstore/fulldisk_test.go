package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mountTmpfs mounts a tmpfs of size bytes at a new folder and unmounts it
// when the test ends. It skips the test where that cannot be done: it needs
// root and a mount(8), which CI's machine has and a developer's often not.
func mountTmpfs(t *testing.T, size int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipped: mounting a small tmpfs to fill needs root")
	}
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("skipped: cannot mount a tmpfs here (%v: %s)", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Logf("umount %s: %v: %s; detaching it", dir, err, out)
			_ = exec.Command("umount", "-l", dir).Run()
		}
	})
	return dir
}

// fillDisk writes a file in dir until the file system is full.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			require.True(t, errors.Is(err, syscall.ENOSPC), "filling: %v", err)
			return path
		}
	}
}

// TestProcessFullDiskEverysec fills the disk under a running server with
// the default appendfsync everysec, with load on: 20 fresh keys and one
// checked key per round. Acknowledgements must stop within about 2 s of the
// disk filling (the next log write fails, then -MISCONF). After kill -9 and a
// restart with room again, the acknowledged decisions missing must be no more
// than those acknowledged in the last second before the failure and after it.
func TestProcessFullDiskEverysec(t *testing.T) {
	mnt := mountTmpfs(t, 8<<20)
	dir := filepath.Join(mnt, "data")
	p, c := startDurable(t, dir)
	ctx := ctxDeadline(t)

	type ack struct {
		key string
		at  time.Time
	}
	var acks []ack
	var filled time.Time
	var misconf int
	start := time.Now()
	for round := 0; time.Since(start) < 5*time.Second; round++ {
		if filled.IsZero() && time.Since(start) > 2500*time.Millisecond {
			fillDisk(t, mnt)
			filled = time.Now()
		}
		keys := []string{"checked"}
		for i := range 20 {
			keys = append(keys, fmt.Sprintf("fresh:%d:%d", round, i))
		}
		for _, k := range keys {
			err := c.Do(ctx, "RL.SLIDE", k, 1_000_000, 3600).Err()
			switch {
			case err == nil:
				acks = append(acks, ack{k, time.Now()})
			case strings.HasPrefix(err.Error(), "MISCONF Errors writing to the AOF file: No space left on device"):
				misconf++
			default:
				require.NoError(t, err)
			}
		}
	}
	require.NotZero(t, misconf, "no -MISCONF on a full disk")
	last := acks[len(acks)-1].at
	t.Logf("%d acknowledged, %d refused; last acknowledgement %v after the disk filled", len(acks), misconf, last.Sub(filled).Round(time.Millisecond))
	assert.Less(t, last.Sub(filled), 2*time.Second+500*time.Millisecond, "acknowledged long after the disk filled")
	assert.Equal(t, "err", info(ctx, t, c)["aof_last_write_status"])

	kill9(t, p)
	require.NoError(t, os.Remove(filepath.Join(mnt, "filler")))
	_, c = startDurable(t, dir)
	var missing, window int
	checked := 0
	for _, a := range acks {
		if a.at.After(filled.Add(-1500 * time.Millisecond)) {
			window++
		}
		if a.key == "checked" {
			checked++
			continue
		}
		if c.Exists(ctx, a.key).Val() == 0 {
			missing++
		}
	}
	r, err := c.Do(ctx, "RL.SLIDE", "checked", 1_000_000, 3600, "PEEK").Int64Slice()
	require.NoError(t, err)
	missing += max(0, checked-int(1_000_000-r[2]-1))
	t.Logf("after restart: %d of %d acknowledged decisions missing; %d were acknowledged from 1.5 s before the disk filled on", missing, len(acks), window)
	assert.LessOrEqual(t, missing, window, "lost more than the last second's decisions")
}
