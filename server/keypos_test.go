package server

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyPositions is every command's first key, last key and key step, as
// COMMAND INFO must report them: cluster-aware clients route by them. A
// command without keys is listed with none, so that a new command fails this
// test until someone decides.
var keyPositions = map[string][3]int8{
	"rl.slide": {1, 1, 1}, "rl.token": {1, 1, 1}, "rl.fixed": {1, 1, 1},
	"rl.log": {1, 1, 1}, "rl.leaky": {1, 1, 1}, "cl.throttle": {1, 1, 1},
	"rl.check": {2, 2, 1}, "rl.info": {1, 1, 1},
	"rl.acquire": {1, 1, 1}, "rl.renew": {1, 1, 1}, "rl.release": {1, 1, 1},
	"gcra": {1, 1, 1}, "throttle": {1, 1, 1}, "rl.reserve": {1, 1, 1}, "rl.commit": {1, 1, 1}, "rl.cancel": {1, 1, 1}, "rl.refund": {1, 1, 1},
	"del": {1, -1, 1}, "exists": {1, -1, 1}, "type": {1, 1, 1}, "pttl": {1, 1, 1}, "ttl": {1, 1, 1},

	"rl.policy": {}, "scan": {}, "keys": {}, "dbsize": {}, "flushall": {}, "flushdb": {}, "swapdb": {}, "move": {1, 1, 1},
	"ping": {}, "echo": {}, "quit": {}, "hello": {}, "auth": {}, "select": {}, "client": {},
	"command": {}, "info": {}, "config": {}, "time": {}, "save": {}, "bgsave": {}, "lastsave": {},
	"shutdown": {}, "multi": {}, "exec": {}, "discard": {},
	"watch": {1, -1, 1}, "unwatch": {}, "subscribe": {}, "unsubscribe": {}, "monitor": {}, "memory": {}, "object": {},
	"cluster": {}, "readonly": {}, "readwrite": {}, "asking": {}, "rl.cluster": {}, "rl.peer": {}, "rl.hop": {},
	"slowlog": {}, "latency": {}, "acl": {},
}

func TestCommandInfoNamesEveryKey(t *testing.T) {
	s, addr := startServer(t, Config{})
	c := newClient(t, addr, 2)
	infos, err := c.Command(ctxT(t)).Result()
	require.NoError(t, err)
	for name := range s.table.Names() {
		want, ok := keyPositions[name]
		if !assert.Truef(t, ok, "%s: add it to keyPositions, with its key positions or none", name) {
			continue
		}
		info := infos[name]
		require.NotNilf(t, info, "COMMAND leaves out %s", name)
		assert.Equalf(t, want, [3]int8{info.FirstKeyPos, info.LastKeyPos, info.StepCount}, "%s: first key, last key, step", name)
	}
}
