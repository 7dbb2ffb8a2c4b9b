package cluster

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepareNamesTheProcessesBefore: each membership given a data dir's
// process file adds its lease's incarnation to it before it starts, and
// its lease names the earlier ones (Lease.Restored), newest last, the
// newest processKeep of them; a lease without a file names none.
func TestPrepareNamesTheProcessesBefore(t *testing.T) {
	dir := t.TempDir()
	var incs []uint64
	for i := range processKeep + 2 {
		f, err := OpenProcessFile(dir)
		require.NoError(t, err)
		m, err := Prepare(Config{NodeName: "n", BindAddr: "127.0.0.1:0", RESPAddr: "127.0.0.1:1", Timing: TestTiming(),
			Logger: slog.New(slog.DiscardHandler), Processes: f})
		require.NoError(t, err)
		m.Kill()
		want := incs[max(0, len(incs)-processKeep):]
		assert.Equal(t, want, m.Lease().Restored(), "process %d", i)
		incs = append(incs, m.Lease().Incarnation())
	}
	assert.Empty(t, NewLease("n", TestTiming().Lease).Restored())
}

// TestProcessFileRefusesWhatItCannotRead: a file of another format, or a
// line that is not an incarnation, stops the open.
func TestProcessFileRefusesWhatItCannotRead(t *testing.T) {
	for _, bad := range []string{"rlstore-deaths 1\n", processHeader + "x\n", processHeader + "0\n"} {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, ProcessFileName), []byte(bad), 0o600))
		_, err := OpenProcessFile(dir)
		assert.ErrorIs(t, err, ErrProcessFormat, "%q", bad)
	}
}
