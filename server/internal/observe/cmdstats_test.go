package observe

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/server/internal/core"
)

// TestErrorsAreBounded: errorstats counts by the reply's first word, and
// past 128 kinds counts a new one as ERR, as Redis bounds it.
func TestErrorsAreBounded(t *testing.T) {
	var e Errors
	e.Count("WRONGTYPE Operation against a key")
	e.Count("ERR syntax error")
	for i := range maxErrorKinds {
		e.Count("KIND" + strconv.Itoa(i) + " x")
	}
	ps, total := e.Pairs()
	assert.Equal(t, int64(maxErrorKinds+2), total)
	assert.Len(t, ps, maxErrorKinds)
	assert.Equal(t, core.Pair{Key: "errorstat_ERR", Val: "count=3"}, ps[0], "ERR, then the two kinds past the bound")
}

// TestOpsMeterAverages: the rate is the mean of the samples' rates.
func TestOpsMeterAverages(t *testing.T) {
	var m OpsMeter
	at := time.Unix(100, 0)
	m.Sample(at, 0)
	assert.Zero(t, m.PerSecond(), "one sample is no rate")
	m.Sample(at.Add(100*time.Millisecond), 10)  // 100/s
	m.Sample(at.Add(200*time.Millisecond), 40)  // 300/s
	m.Sample(at.Add(200*time.Millisecond), 999) // not after the last: ignored but noted
	assert.Equal(t, int64(200), m.PerSecond())
}
