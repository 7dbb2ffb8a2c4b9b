package resp

import (
	"io"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A connection the kernel accepted just before the drain closed the socket,
// but that reaches admit only after the drain found no connection left, must
// be refused: the stop has gone on to its final snapshot, so a command it ran
// would be acknowledged and then lost.
func TestAdmitAfterDrainIsOverRefuses(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var maxc atomic.Int64
	maxc.Store(10)
	l := NewListener(inner, &maxc, slog.New(slog.NewTextHandler(io.Discard, nil)))
	l.Drain(time.Time{})
	select {
	case <-l.drained:
	default:
		t.Fatal("a drain with no connection should be over at once")
	}
	srv, cli := net.Pipe()
	defer cli.Close()
	require.Nil(t, l.admit(srv), "admitted a connection after the drain was over")
	require.Zero(t, l.Count())
}

func TestNextBackoffDoublesWithinBounds(t *testing.T) {
	var got []time.Duration
	d := time.Duration(0)
	for range 10 {
		d = nextBackoff(d)
		got = append(got, d)
	}
	ms := time.Millisecond
	assert.Equal(t, []time.Duration{5 * ms, 10 * ms, 20 * ms, 40 * ms, 80 * ms, 160 * ms, 320 * ms, 640 * ms, time.Second, time.Second}, got)
}
