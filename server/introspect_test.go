package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCommandDescribesTheTable(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		s, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)

		infos, err := c.Command(ctx).Result() // go-redis parses Redis 7's ten fields
		require.NoError(t, err)
		assert.Len(t, infos, s.table.Len())
		assert.EqualValues(t, s.table.Len(), c.Do(ctx, "COMMAND", "COUNT").Val())

		ping := infos["ping"]
		require.NotNil(t, ping)
		assert.EqualValues(t, -1, ping.Arity)
		require.Contains(t, infos, "client")
		assert.Contains(t, infos["shutdown"].Flags, "no_multi")
		assert.Contains(t, infos, "rl.slide")
		assert.Contains(t, infos["auth"].Flags, "no_auth")
	})
}

func TestCommandInfoDocsAndList(t *testing.T) {
	bothProtocols(t, func(t *testing.T, proto int) {
		s, addr := startServer(t, Config{})
		c := newClient(t, addr, proto)
		ctx := ctxT(t)

		info, err := c.Do(ctx, "COMMAND", "INFO", "echo", "nosuch").Slice()
		require.NoError(t, err)
		require.Len(t, info, 2)
		echo := info[0].([]any)
		assert.Len(t, echo, 10)
		assert.Equal(t, "echo", echo[0])
		assert.EqualValues(t, 2, echo[1])
		assert.Nil(t, info[1], "an unknown command gets a null")

		docs := asMap(t, c.Do(ctx, "COMMAND", "DOCS", "ping", "client", "nosuch").Val())
		assert.Len(t, docs, 2, "unknown commands are left out")
		ping := asMap(t, docs["ping"])
		assert.Equal(t, "connection", ping["group"])
		assert.NotEmpty(t, ping["summary"])
		subs := asMap(t, asMap(t, docs["client"])["subcommands"])
		assert.Contains(t, subs, "client|setname")

		list, err := c.Do(ctx, "COMMAND", "LIST").StringSlice()
		require.NoError(t, err)
		assert.Len(t, list, s.table.Len())
		assert.Contains(t, list, "hello")
	})
}
