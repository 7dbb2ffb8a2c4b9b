package server

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// forwardACL has one user for each kind of rule.
const forwardACL = `user default off
user plus on >pw ~* +rl.slide
user minus on >pw ~* +@all -rl.slide
user pattern on >pw ~api:* +@all
user all on >pw allkeys +@all
user free on nopass ~* +@all
`

// TestACLOverForwarding is issue 25's finding 3: a user's command on a key
// that another node owns was checked against the node-to-node connection's
// user (default, off) and refused. Now the node the client talks to checks
// the client's own rights and the owner trusts the hop: every user gets,
// for keys owned by each node, exactly what it gets from one node alone.
func TestACLOverForwarding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "users.acl")
	require.NoError(t, os.WriteFile(path, []byte(forwardACL), 0o600))
	withACL := func(c *Config) { c.ACLFile = path }
	nodes := startTestCluster(t, 3, clusterOpts{config: withACL})
	_, alone := startServer(t, Config{ACLFile: path})
	keys := map[string]string{}
	for _, owner := range nodes {
		keys["api:"+owner.name], _ = keyOwnedBy(t, nodes, owner, "api:")
		keys["web:"+owner.name], _ = keyOwnedBy(t, nodes, owner, "web:")
	}
	cmds := [][]any{{"RL.SLIDE", nil, 100, 60}, {"RL.FIXED", nil, 100, 60}, {"RL.PEEK", nil}}
	for _, user := range []string{"plus", "minus", "pattern", "all", "free"} {
		viaCluster, viaOne := login(t, nodes[0].addr, user), login(t, alone, user)
		for what, key := range keys {
			for _, cmd := range cmds {
				args := append([]any{cmd[0], key}, cmd[2:]...)
				want := aclOutcome(viaOne.Do(context.Background(), args...))
				got := aclOutcome(viaCluster.Do(context.Background(), args...))
				assert.Equal(t, want, got, "user %s: %v on %s (owned by %s)", user, cmd[0], key, what)
			}
		}
	}
}

func login(t *testing.T, addr, user string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: "pw", Protocol: 2, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// aclOutcome is a reply's error, or "ok" with its first element for a decision.
func aclOutcome(cmd *redis.Cmd) string {
	if err := cmd.Err(); err != nil {
		return err.Error()
	}
	if vs, ok := cmd.Val().([]any); ok && len(vs) > 0 {
		return "ok " + redisString(vs[0])
	}
	return "ok"
}

func redisString(v any) string {
	if n, ok := v.(int64); ok && n == 1 {
		return "allowed"
	}
	return "other"
}
