package proc

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadyWriterFindsTheAddress(t *testing.T) {
	for name, log := range map[string]string{
		"text": "time=x level=INFO msg=\"starting rlstore\"\ntime=x level=INFO msg=\"ready to accept connections\" addr=127.0.0.1:40001 shards=256\nmore\n",
		"json": "{\"msg\":\"starting rlstore\"}\n{\"time\":\"x\",\"level\":\"INFO\",\"msg\":\"ready to accept connections\",\"addr\":\"127.0.0.1:40001\"}\n",
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			w := newReadyWriter(&out)
			for i := 0; i < len(log); i += 7 { // the line arrives in pieces
				n, err := w.Write([]byte(log[i:min(i+7, len(log))]))
				require.NoError(t, err)
				require.Equal(t, min(7, len(log)-i), n)
			}
			require.Len(t, w.addr, 1)
			assert.Equal(t, "127.0.0.1:40001", <-w.addr)
			assert.Equal(t, log, out.String(), "the log passes through whole")
		})
	}
}

func TestReadyWriterWithoutAReadyLine(t *testing.T) {
	w := newReadyWriter(&bytes.Buffer{})
	_, _ = w.Write([]byte("msg=\"refusing to start\" addr=127.0.0.1:1\n"))
	assert.Empty(t, w.addr)
}
