package main

import (
	"encoding/json"
	"flag"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// There is no container engine on the test machines, so the image is never
// built here: these tests read deploy/docker/Dockerfile and run what it
// would run.

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct{ cmd, args string }

func parseDockerfile(t *testing.T, path string) []instruction {
	t.Helper()
	var out []instruction
	var cur strings.Builder
	for _, line := range strings.Split(readFile(t, path), "\n") {
		trimmed := strings.TrimSpace(line)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		out = append(out, instruction{strings.ToUpper(cmd), strings.TrimSpace(args)})
		cur.Reset()
	}
	return out
}

// stage is one FROM and what follows it.
type stage struct {
	from, name string
	body       []instruction
}

func stages(ins []instruction) []stage {
	var out []stage
	for _, in := range ins {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{from: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			}
			out = append(out, s)
			continue
		}
		out[len(out)-1].body = append(out[len(out)-1].body, in)
	}
	return out
}

func (s stage) last(cmd string) string {
	v := ""
	for _, in := range s.body {
		if in.cmd == cmd {
			v = in.args
		}
	}
	return v
}

func (s stage) all(cmd string) []string {
	var v []string
	for _, in := range s.body {
		if in.cmd == cmd {
			v = append(v, in.args)
		}
	}
	return v
}

// env is the stage's ENV, written as KEY=VALUE pairs.
func (s stage) env(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, e := range s.all("ENV") {
		for _, kv := range strings.Fields(e) {
			k, v, ok := strings.Cut(kv, "=")
			require.True(t, ok, "ENV %q: write KEY=VALUE", e)
			out[k] = v
		}
	}
	return out
}

func execForm(t *testing.T, what, args string) []string {
	t.Helper()
	var argv []string
	require.NoError(t, json.Unmarshal([]byte(args), &argv), "%s must be in exec form (a JSON array), so that no shell is needed: %s", what, args)
	require.NotEmpty(t, argv)
	return argv
}

// imageDockerfile is the image's Dockerfile, from this package's folder.
const imageDockerfile = "../../deploy/docker/Dockerfile"

// dockerTLSPort is the port the image and docs/deployment.md give --tls-port,
// which has no default.
const dockerTLSPort = "6380"

func TestDockerfileStages(t *testing.T) {
	st := stages(parseDockerfile(t, imageDockerfile))
	require.GreaterOrEqual(t, len(st), 2, "a multi-stage build")
	build, final := st[0], st[len(st)-1]
	assert.NotEmpty(t, build.name, "the build stage is named, for COPY --from")
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readFile(t, "../../go.mod"))[1]
	assert.Regexp(t, `^golang:`+regexp.QuoteMeta(goVersion)+`\b`, build.from, "the build stage's Go is go.mod's")
	buildCmd := strings.Join(build.all("RUN"), "\n")
	assert.Contains(t, buildCmd, "CGO_ENABLED=0", "a static binary")
	assert.Contains(t, buildCmd, "-trimpath")
	assert.Contains(t, buildCmd, "./cmd/rlstore")
	assert.True(t, final.from == "scratch" || strings.HasPrefix(final.from, "gcr.io/distroless/static"),
		"the final stage is scratch or distroless static, not %s", final.from)
	assert.Empty(t, final.all("RUN"), "nothing runs in the final stage: it has no shell")
	for _, cp := range final.all("COPY") {
		assert.Contains(t, cp, "--from="+build.name, "the final stage takes only what the build made")
	}

	user := final.last("USER")
	require.NotEmpty(t, user, "the final stage names its user")
	uid, _, _ := strings.Cut(user, ":")
	assert.NotContains(t, []string{"0", "root"}, uid, "the server does not run as root")
	if n, err := strconv.Atoi(uid); err == nil {
		assert.Positive(t, n)
	}

	entry := execForm(t, "ENTRYPOINT", final.last("ENTRYPOINT"))
	hc := final.last("HEALTHCHECK")
	_, cmd, ok := strings.Cut(hc, "CMD ")
	require.True(t, ok, "a HEALTHCHECK CMD: %q", hc)
	check := execForm(t, "HEALTHCHECK CMD", cmd)
	assert.Equal(t, []string{entry[0], "health"}, check, "the health check is `rlstore health`, with the server's configuration")
}

// portFlags are the flags that open a listening port, and the port each
// opens in the image: env is the image's ENV.
// dockerGRPCPort is the port docs/gateway.md gives --grpc-port in the image:
// envoyproxy/ratelimit's, so that an Envoy config pointing at it works as is.
const dockerGRPCPort = "8081"

func portFlags(env map[string]string) map[string][]string {
	_, gossip, _ := net.SplitHostPort(cluster.DefaultBindAddr)
	_, metrics, _ := net.SplitHostPort(env[envName("metrics-addr")])
	return map[string][]string{
		"port":         {strconv.Itoa(defaultConfig().Port) + "/tcp"},
		"tls-port":     {dockerTLSPort + "/tcp"},
		"cluster-addr": {gossip + "/tcp", gossip + "/udp"},
		"metrics-addr": {metrics + "/tcp"},
		"pprof-addr":   nil, // loopback only: --metrics-addr serves the same profiles
		"grpc-port":    {dockerGRPCPort + "/tcp"},
	}
}

// TestFlagsThatOpenPortsAreKnown makes a new flag that listens (a gRPC
// port, say) fail here until portFlags says where the image exposes it.
func TestFlagsThatOpenPortsAreKnown(t *testing.T) {
	var c config
	known := portFlags(map[string]string{})
	newFlagSet(&c).VisitAll(func(f *flag.Flag) {
		if f.Name == "port" || strings.HasSuffix(f.Name, "-port") || strings.HasSuffix(f.Name, "-addr") {
			_, ok := known[f.Name]
			assert.True(t, ok, "--%s opens a port: add it to portFlags and to EXPOSE in %s", f.Name, imageDockerfile)
		}
	})
}

func TestDockerfileExposesEveryPortAFlagOpens(t *testing.T) {
	st := stages(parseDockerfile(t, imageDockerfile))
	final := st[len(st)-1]
	env := final.env(t)
	var exposed []string
	for _, e := range final.all("EXPOSE") {
		for _, p := range strings.Fields(e) {
			if !strings.Contains(p, "/") {
				p += "/tcp"
			}
			exposed = append(exposed, p)
		}
	}
	var want []string
	for _, ports := range portFlags(env) {
		want = append(want, ports...)
	}
	assert.ElementsMatch(t, want, exposed, "EXPOSE lists every port a flag opens, and no other")

	var c config
	fs := newFlagSet(&c)
	for k := range env {
		if !strings.HasPrefix(k, envPrefix) {
			continue
		}
		found := false
		fs.VisitAll(func(f *flag.Flag) { found = found || envName(f.Name) == k })
		assert.True(t, found, "ENV %s names no flag", k)
	}
}

// TestDockerfileHealthCheckRuns runs the image's HEALTHCHECK with the
// image's ENV against a server started with the same ENV, then against
// the same address once the server is gone.
func TestDockerfileHealthCheckRuns(t *testing.T) {
	st := stages(parseDockerfile(t, imageDockerfile))
	final := st[len(st)-1]
	env := final.env(t)
	host, _, err := net.SplitHostPort(env[envName("metrics-addr")])
	require.NoError(t, err)
	// Free ports instead of the image's fixed ones, on a shared machine,
	// and the password protected mode asks for on 0.0.0.0.
	env[envName("metrics-addr")] = net.JoinHostPort(host, testport.Stable(t))
	env[envName("port")] = "0"
	env[envName("requirepass")] = "image-test"
	var kv []string
	for k, v := range env {
		kv = append(kv, k+"="+v)
	}
	p := startProc(t, kv)
	p.Addr(t)

	_, cmd, _ := strings.Cut(final.last("HEALTHCHECK"), "CMD ")
	argv := execForm(t, "HEALTHCHECK CMD", cmd)
	run := func() (int, string) {
		c := exec.Command(rlstoreBin, argv[1:]...)
		c.Env = append(os.Environ(), kv...)
		out, err := c.CombinedOutput()
		return c.ProcessState.ExitCode(), string(out) + errString(err)
	}
	code, out := run()
	assert.Equal(t, 0, code, "a live server: %s", out)
	assert.Contains(t, out, "/readyz answered 200")
	p.Kill()
	code, out = run()
	assert.Equal(t, 1, code, "a dead server: %s", out)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return " (" + err.Error() + ")"
}
