package server

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kindMemoryCases are the rows of shard's TestMeasureKindMemory as calls of
// the server: each charges the key user:100000 calls times, step apart.
var kindMemoryCases = map[string]struct {
	call  []any
	calls int
	step  time.Duration
}{
	"slide 100/60s, 1 req":            {[]any{"RL.SLIDE", "user:100000", 100, 60}, 1, time.Millisecond},
	"slide 100/60s, 10 req over 10 s": {[]any{"RL.SLIDE", "user:100000", 100, 60}, 10, time.Second},
	"token 100 per 1s":                {[]any{"RL.TOKEN", "user:100000", 100, 100, "1s"}, 10, time.Millisecond},
	"fixed 100/60s":                   {[]any{"RL.FIXED", "user:100000", 100, 60}, 10, time.Millisecond},
	"log 100/60s, 10 req":             {[]any{"RL.LOG", "user:100000", 100, 60}, 10, time.Millisecond},
	"log 100/60s, 100 req":            {[]any{"RL.LOG", "user:100000", 100, 60}, 100, time.Millisecond},
	"leaky 100 per 1s":                {[]any{"RL.LEAKY", "user:100000", 100, 100, "1s"}, 10, time.Millisecond},
}

var measuredRow = regexp.MustCompile(`(?m)^(\S.*?)\s+usage=(\d+) B store=`)

// TestAlgorithmsDocMemoryIsMemoryUsage holds docs/algorithms.md's memory
// figures to MEMORY USAGE: the measured block's usage column is what MEMORY
// USAGE answers for the same key after the same calls, and every figure of
// the table's memory column is one of them.
func TestAlgorithmsDocMemoryIsMemoryUsage(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "docs", "algorithms.md"))
	require.NoError(t, err)
	rows := measuredRow.FindAllStringSubmatch(string(text), -1)
	require.Len(t, rows, len(kindMemoryCases), "the measured block's rows")
	figures := map[string]bool{}
	for _, row := range rows {
		tc, ok := kindMemoryCases[row[1]]
		require.Truef(t, ok, "no case for the measured row %q", row[1])
		clk, c := startWithClock(t, 2)
		for i := range tc.calls {
			clk.Set(time.Duration(i) * tc.step)
			wantDecision(t, c, tc.call...)
		}
		got, err := c.MemoryUsage(ctxT(t), "user:100000").Result()
		require.NoError(t, err)
		assert.Equalf(t, row[2], strconv.FormatInt(got, 10), "MEMORY USAGE after %q", row[1])
		figures[row[2]] = true
	}
	column := regexp.MustCompile(`(\d+) B\b`)
	for _, line := range strings.Split(string(text), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`RL.") && !strings.HasPrefix(strings.TrimSpace(cells[1]), "`CL.") {
			continue
		}
		for _, m := range column.FindAllStringSubmatch(cells[4], -1) {
			assert.Truef(t, figures[m[1]], "the table's %s B (%s) is no measured MEMORY USAGE", m[1], strings.TrimSpace(cells[1]))
		}
	}
}
