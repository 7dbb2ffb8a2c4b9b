package report

import (
	"encoding/xml"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWriteSVGIsWellFormed(t *testing.T) {
	series := []Series{
		{Name: "rlstore RL.SLIDE", Points: []Point{{1, 120000, 2 * time.Millisecond}, {16, 900000, 3 * time.Millisecond}}},
		{Name: "Redis+Lua <slide>", Points: []Point{{1, 80000, 4 * time.Millisecond}, {16, 110000, 20 * time.Millisecond}}},
	}
	var b strings.Builder
	require.NoError(t, WriteSVG(&b, "RL.SLIDE vs Redis+Lua", series))
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	for {
		_, err := dec.Token()
		if err != nil {
			assert.Equal(t, "EOF", err.Error(), "the SVG parses as XML")
			break
		}
	}
	assert.Equal(t, 4, strings.Count(b.String(), "<polyline"), "one line per series in each of two panels")
	assert.Contains(t, b.String(), "Redis+Lua &lt;slide&gt;")
}

func TestLogRangeCoversDecades(t *testing.T) {
	lo, hi := logRange([]Series{{Points: []Point{{1, 150, 0}, {2, 9000, 0}}}}, func(p Point) float64 { return p.Throughput })
	assert.Equal(t, 100.0, lo)
	assert.Equal(t, 10000.0, hi)
	lo, hi = logRange(nil, func(p Point) float64 { return p.Throughput })
	assert.Less(t, lo, hi)
}
