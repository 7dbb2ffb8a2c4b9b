package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProcessDataDirDeleted deletes --data-dir under a running server. The
// server notices, recreates the folder with a fresh snapshot and the policy
// file, and a kill -9 afterwards loses nothing it acknowledged, where it
// used to lose everything while INFO still said ok.
func TestProcessDataDirDeleted(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	p, c := startDurable(t, dir)
	ctx := ctxDeadline(t)
	require.NoError(t, c.Do(ctx, "RL.POLICY", "SET", "pol", "SLIDE", 10, 60).Err())
	admit(ctx, t, c, "before", 3)
	waitFsyncAfter(ctx, t, c, time.Now())

	require.NoError(t, os.RemoveAll(dir))
	admit(ctx, t, c, "during", 2) // in memory; the recreating snapshot takes them
	require.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(dir, "policies.rlp"))
		return err == nil && info(ctx, t, c)["rl_misconf"] == "0" && infoInt(ctx, t, c, "rdb_saves") > 0
	}, deadline, 10*time.Millisecond, "the data dir was not recreated")
	assert.Contains(t, p.Log.String(), "the data directory is gone")
	admit(ctx, t, c, "after", 1)
	waitFsyncAfter(ctx, t, c, time.Now())
	kill9(t, p)

	_, c = startDurable(t, dir)
	assert.EqualValues(t, slideLimit-3, remaining(ctx, t, c, "before"))
	assert.EqualValues(t, slideLimit-2, remaining(ctx, t, c, "during"))
	assert.EqualValues(t, slideLimit-1, remaining(ctx, t, c, "after"))
	assert.NoError(t, c.Do(ctx, "RL.POLICY", "GET", "pol").Err(), "the policy survived")
}
