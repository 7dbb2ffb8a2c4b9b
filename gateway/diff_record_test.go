//go:build rlsrecord

package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// TestRecordDifferential runs envoyproxy/ratelimit (RLS_REFERENCE_BIN,
// built from source by testdata/diff/record.sh) in front of redis-server,
// sends it the random traces, and writes its answers to testdata/diff for
// TestDifferential to replay against rlstore.
func TestRecordDifferential(t *testing.T) {
	bin := os.Getenv("RLS_REFERENCE_BIN")
	if bin == "" {
		t.Skip("RLS_REFERENCE_BIN names no envoyproxy/ratelimit binary; see testdata/diff/README.md")
	}
	ref := os.Getenv("RLS_REFERENCE") // what it is, for the golden files
	redisAddr := startRedis(t)
	rdb := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer rdb.Close()
	steps, _ := strconv.Atoi(os.Getenv("RLS_RECORD_STEPS"))
	if steps == 0 {
		steps = 300
	}
	only := os.Getenv("RLS_SCENARIOS") // comma-separated names; empty: all
	for _, sc := range diffScenarios() {
		if only != "" && !slices.Contains(strings.Split(only, ","), sc.Name) {
			continue
		}
		for _, seed := range []uint64{1, 2} {
			require.NoError(t, rdb.FlushAll(context.Background()).Err())
			client := startReference(t, bin, redisAddr, sc)
			tr := diffTrace{Reference: ref, Scenario: sc.Name, Seed: seed, Config: sc.config()}
			r := rand.New(rand.NewPCG(seed, 30))
			for range steps {
				tr.Steps = append(tr.Steps, recordStep(t, client, r))
			}
			out, err := json.MarshalIndent(tr, "", " ")
			require.NoError(t, err)
			name := filepath.Join("testdata", "diff", fmt.Sprintf("%s-%d.json", sc.Name, seed))
			require.NoError(t, os.WriteFile(name, append(out, '\n'), 0o644))
			t.Logf("wrote %s", name)
		}
	}
}

// recordStep sends one random request away from a second's end, so that
// the reference reads the clock in the second the step records, and pauses
// a little, so that a trace crosses several windows.
func recordStep(t *testing.T, c pb.RateLimitServiceClient, r *rand.Rand) diffStep {
	req, pause := drawStep(r)
	time.Sleep(pause)
	now := time.Now()
	if ms := now.Nanosecond() / 1e6; ms > 850 {
		time.Sleep(time.Duration(1020-ms) * time.Millisecond)
		now = time.Now()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := c.ShouldRateLimit(ctx, req)
	if after := time.Now(); after.Unix() != now.Unix() {
		t.Fatalf("a call took from %v to %v, across a second", now, after)
	}
	st := diffStep{At: now.UnixNano()}
	st.Request, _ = diffMarshal.Marshal(req)
	if err != nil {
		st.Error = status.Convert(err).Message()
		return st
	}
	st.Response, _ = diffMarshal.Marshal(resp)
	return st
}

func freePort(t *testing.T) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func startRedis(t *testing.T) string {
	port := freePort(t)
	cmd := exec.Command("redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	waitFor(t, func() bool { return rdb.Ping(context.Background()).Err() == nil }, "redis-server answers")
	return addr
}

// startReference starts envoyproxy/ratelimit with sc's settings and the
// differential configuration, and returns a client once it answers.
func startReference(t *testing.T, bin, redisAddr string, sc diffScenario) pb.RateLimitServiceClient {
	root := t.TempDir()
	cfgDir := filepath.Join(root, "ratelimit", "config")
	require.NoError(t, os.MkdirAll(cfgDir, 0o755))
	writeFile(t, filepath.Join(cfgDir, "diff.yaml"), sc.config())
	grpcPort := freePort(t)
	env := append(os.Environ(), "USE_STATSD=false", "LOG_LEVEL=warn", "REDIS_SOCKET_TYPE=tcp", "REDIS_URL="+redisAddr,
		"RUNTIME_ROOT="+root, "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_WATCH_ROOT=false",
		"HOST=127.0.0.1", "PORT="+strconv.Itoa(freePort(t)), "GRPC_HOST=127.0.0.1", "GRPC_PORT="+strconv.Itoa(grpcPort),
		"DEBUG_HOST=127.0.0.1", "DEBUG_PORT="+strconv.Itoa(freePort(t)), "EXPIRATION_JITTER_MAX_SECONDS=0")
	env = append(env, sc.Env...)
	cmd := exec.Command(bin)
	cmd.Env = env
	var log strings.Builder
	cmd.Stderr, cmd.Stdout = &log, &log
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("envoyproxy/ratelimit log:\n%s", log.String())
		}
	})
	conn, err := grpc.NewClient("127.0.0.1:"+strconv.Itoa(grpcPort), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	c := pb.NewRateLimitServiceClient(conn)
	waitFor(t, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "unknown", Descriptors: []*pbstruct.RateLimitDescriptor{desc("k", "v")}})
		return err == nil
	}, "envoyproxy/ratelimit answers")
	return c
}
