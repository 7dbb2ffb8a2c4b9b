package server

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/persistence"
	"github.com/rlstore/rlstore/shard"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// infoBySection splits an INFO reply into each section's text, by the
// section's name as INFO writes it ("Server").
func infoBySection(info string) map[string]string {
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(strings.ReplaceAll(info, "\r\n", "\n"), "\n") {
		if strings.HasPrefix(line, "# ") {
			name = line[2:]
			out[name] = ""
			continue
		}
		if name != "" && line != "" {
			out[name] += line + "\n"
		}
	}
	return out
}

// pyTypes parses each section of an INFO reply with redis-py's parse_info
// and returns each field's Python type name (int, float, str, dict), by section.
func pyTypes(t *testing.T, python, info string) map[string]map[string]string {
	t.Helper()
	cmd := exec.Command(python, "-c", `import sys, json, redis.client
out, name, text = {}, None, ""
for line in sys.stdin.read().replace("\r\n", "\n").split("\n") + ["# end"]:
    if line.startswith("# "):
        if name is not None:
            out[name] = {k: type(v).__name__ for k, v in redis.client.parse_info(text).items()}
        name, text = line[2:], ""
    elif line:
        text += line + "\n"
print(json.dumps(out))`)
	cmd.Stdin = strings.NewReader(info)
	out, err := cmd.Output()
	require.NoError(t, err, "redis-py's parse_info")
	types := map[string]map[string]string{}
	require.NoError(t, json.Unmarshal(out, &types))
	return types
}

// fieldPattern names the fields whose names carry a command, an error, a
// database or a replica: cmdstat_get is compared as cmdstat_*.
var fieldPattern = regexp.MustCompile(`^(cmdstat_|errorstat_|latency_percentiles_usec_|db|slave)\S+$`)

func fieldKind(name string) string {
	if m := fieldPattern.FindStringSubmatch(name); m != nil {
		return m[1] + "*"
	}
	return name
}

// redis72 are fields Redis 7.2 added, with its meanings.
var redis72 = map[string]bool{"client_output_buffer_limit_disconnections": true}

// TestInfoFieldsMatchRedis parses rlstore's INFO everything and redis-server
// 7's (testdata) with redis-py's and go-redis's parsers: every section is
// one Redis has, and every field is one Redis has in that section, of the
// same type, or is named rl_*. The fields tools read that rlstore lacked
// must be there.
func TestInfoFieldsMatchRedis(t *testing.T) {
	python := "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import redis.client").Run(); err != nil {
		t.Skip("redis-py (Debian's python3-redis) is not installed")
	}
	golden, err := os.ReadFile("testdata/redis7/info-everything.txt")
	require.NoError(t, err)
	redisTypes := map[string]map[string]string{}
	for name, fields := range pyTypes(t, python, string(golden)) {
		redisTypes[name] = map[string]string{}
		for k, v := range fields {
			redisTypes[name][fieldKind(k)] = v
		}
	}

	_, addr := startServer(t, Config{})
	c := newClient(t, addr, 3)
	ctx := ctxT(t)
	require.NoError(t, c.Do(ctx, "RL.SLIDE", "k", 5, 60).Err())
	require.NoError(t, c.Do(ctx, "RL.INFO", "k").Err())
	before, err := c.InfoMap(ctx, "stats", "errorstats").Result()
	require.NoError(t, err)
	require.Error(t, c.Do(ctx, "NOSUCH").Err())
	info, err := c.Info(ctx, "everything").Result()
	require.NoError(t, err)

	goRedis, err := c.InfoMap(ctx, "everything").Result()
	require.NoError(t, err)
	ours := infoBySection(info)
	assert.Len(t, goRedis, len(ours), "go-redis's parser finds every section")
	order := regexp.MustCompile(`(?m)^# (\S+)`)
	var names, redisNames []string
	for _, m := range order.FindAllStringSubmatch(info, -1) {
		names = append(names, m[1])
	}
	for _, m := range order.FindAllStringSubmatch(string(golden), -1) {
		if _, ok := ours[m[1]]; ok {
			redisNames = append(redisNames, m[1])
		}
	}
	assert.Equal(t, redisNames, names, "sections in Redis's order")

	ourTypes := pyTypes(t, python, info)
	assert.Len(t, ourTypes, len(ours), "redis-py's parser finds every section")
	for name := range ours {
		want, ok := redisTypes[name]
		if !assert.True(t, ok, "section %s is not one of Redis 7's", name) {
			continue
		}
		for k, typ := range ourTypes[name] {
			if fieldKind(k) == k {
				assert.Contains(t, goRedis[name], k, "go-redis's parser reads INFO %s: %s", name, k)
			}
			if strings.HasPrefix(k, "rl_") || redis72[k] {
				continue
			}
			if assert.Contains(t, want, fieldKind(k), "INFO %s: %s is not Redis's; name it rl_*", name, k) {
				assert.Equal(t, want[fieldKind(k)], typ, "INFO %s: %s's type, as redis-py parses it", name, k)
			}
		}
	}

	for name, fields := range map[string][]string{
		"Server": {"run_id", "hz", "configured_hz", "executable", "config_file"},
		"Memory": {"maxmemory", "maxmemory_human", "maxmemory_policy"},
		"Stats": {"instantaneous_ops_per_sec", "total_net_input_bytes", "total_net_output_bytes",
			"keyspace_hits", "keyspace_misses", "evicted_keys", "total_error_replies"},
		"CPU":        {"used_cpu_sys", "used_cpu_user", "used_cpu_sys_children", "used_cpu_user_children"},
		"Errorstats": {"errorstat_ERR"},
	} {
		for _, f := range fields {
			assert.Contains(t, goRedis[name], f, "INFO %s has %s", name, f)
		}
	}
	errs := func(m map[string]map[string]string) (n, total int) {
		_, _ = fmt.Sscanf(m["Errorstats"]["errorstat_ERR"], "count=%d", &n)
		total, _ = strconv.Atoi(m["Stats"]["total_error_replies"])
		return n, total
	}
	n0, total0 := errs(before)
	n1, total1 := errs(goRedis)
	assert.Equal(t, [2]int{1, 1}, [2]int{n1 - n0, total1 - total0}, "the unknown command counts as one ERR, and one error reply")
	assert.Equal(t, "1", goRedis["Stats"]["keyspace_hits"], "RL.INFO k found it")
	assert.Regexp(t, `^keys=1,expires=1,avg_ttl=[1-9]\d*$`, goRedis["Keyspace"]["db0"], "avg_ttl is the keys' mean TTL in ms")
}

// TestConfigGetAsRedis checks the CONFIG GET parameters the issue found
// wrong or missing: appendfsync agrees with the mode configured (and
// logged) also without a data dir, as Redis shows it with appendonly no;
// save names the snapshot interval with a data dir; dir, cluster-enabled
// and hz answer.
func TestConfigGetAsRedis(t *testing.T) {
	ctx := ctxT(t)
	get := func(addr string, params ...string) map[string]string {
		args := append([]any{"CONFIG", "GET"}, anyArgs(params)...)
		out := map[string]string{}
		rep, err := newClient(t, addr, 2).Do(ctx, args...).StringSlice()
		require.NoError(t, err)
		for i := 0; i+1 < len(rep); i += 2 {
			out[rep[i]] = rep[i+1]
		}
		return out
	}
	_, addr := startServer(t, Config{})
	assert.Equal(t, map[string]string{"appendonly": "no", "appendfsync": "everysec", "save": "", "dir": "",
		"cluster-enabled": "no", "hz": "10"}, get(addr, "appendonly", "appendfsync", "save", "dir", "cluster-enabled", "hz"))

	_, addr = startServer(t, Config{AppendFsync: "always", SweepInterval: 20 * time.Millisecond})
	assert.Equal(t, map[string]string{"appendfsync": "always", "hz": "50"}, get(addr, "appendfsync", "hz"), "as configured and logged")

	m, err := shard.New(shard.Config{Shards: 16})
	require.NoError(t, err)
	dir := t.TempDir()
	st, _, err := persistence.Open(dir, m, persistence.Options{Fsync: persistence.FsyncEverysec, SnapshotInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	_, addr = startServer(t, Config{Store: m, Durability: st, DataDir: dir, SaveInterval: 5 * time.Minute})
	assert.Equal(t, map[string]string{"appendonly": "yes", "appendfsync": "everysec", "save": "300 1", "dir": dir},
		get(addr, "appendonly", "appendfsync", "save", "dir"))

	nodes := startTestCluster(t, 1, clusterOpts{})
	assert.Equal(t, map[string]string{"cluster-enabled": "yes"}, get(nodes[0].addr, "cluster-enabled"))
}
