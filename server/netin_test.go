package server

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// INFO's total_net_input_bytes counts every byte a client sent, also those
// read while the connection stays in its wait between batches
// (resp.RawReader.Stay), which reads the requests after the first.
func TestNetInputCountsReadsInStay(t *testing.T) {
	_, addr := startServer(t, Config{})
	c := dialRaw(t, addr)
	for range 20 {
		c.send(t, respCmd("PING"))
		require.Equal(t, "+PONG", c.line(t))
	}
	o := dialRaw(t, addr)
	o.send(t, respCmd("INFO", "stats"))
	n, err := strconv.Atoi(infoField(o.bulk(t), "total_net_input_bytes"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 20*len(respCmd("PING")))
}
