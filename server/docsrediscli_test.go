package server

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cliStep is one command of a documented redis-cli session and the reply
// the docs show for it, as words.
type cliStep struct {
	line string
	want []string
}

var (
	promptLine = regexp.MustCompile(`^127\.0\.0\.1:6379> (.+)$`)
	arrowLine  = regexp.MustCompile(`^> (.+?)\s+→ (.+?)(\s{2,}\(.*\))?$`)
	docComment = regexp.MustCompile(`\s{2,}#.*$`)
	listMarker = regexp.MustCompile(`^(\d+\)\s+)+`)
)

// docSessions returns the redis-cli sessions of a Markdown file: each
// fenced block holding "127.0.0.1:6379> command" lines followed by their
// output, or "> command → reply" lines with the reply's lines joined.
func docSessions(text string) [][]cliStep {
	var sessions [][]cliStep
	var cur []cliStep
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			if in && cur != nil {
				sessions = append(sessions, cur)
			}
			in, cur = !in, nil
		case !in:
		case promptLine.MatchString(line):
			cur = append(cur, cliStep{line: strings.TrimSpace(promptLine.FindStringSubmatch(line)[1])})
		case arrowLine.MatchString(line):
			m := arrowLine.FindStringSubmatch(line)
			cur = append(cur, cliStep{line: strings.TrimSpace(m[1]), want: strings.Fields(m[2])})
		case len(cur) > 0:
			last := &cur[len(cur)-1]
			last.want = append(last.want, replyWords(docComment.ReplaceAllString(line, ""))...)
		}
	}
	return sessions
}

// replyWords turns a line of redis-cli's output into words, as the docs
// join them: without list markers, "(integer)" or quotes.
func replyWords(line string) []string {
	line = listMarker.ReplaceAllString(strings.TrimSpace(line), "")
	line = strings.TrimPrefix(line, "(integer) ")
	if u, err := strconv.Unquote(line); err == nil {
		line = u
	}
	return strings.Fields(line)
}

// sameShape reports whether got has want's shape: as many words, each
// integer where want has one, and equal where want's is a word or an
// integer below 100 (a flag, limit or count; larger ones are times).
func sameShape(want, got []string) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		w, errW := strconv.ParseInt(want[i], 10, 64)
		g, errG := strconv.ParseInt(got[i], 10, 64)
		switch {
		case errW != nil && want[i] != got[i]:
			return false
		case errW == nil && (errG != nil || (w > -100 && w < 100 && w != g)):
			return false
		}
	}
	return true
}

// TestDocsRedisCLISessions pastes every documented redis-cli session of the
// README and docs/ into an interactive redis-cli, one command at a time, and
// compares each reply's shape with the documented one. The sessions of a
// file share a server, as a reader's would; before a session, the keys its
// commands write (by COMMAND GETKEYSANDFLAGS) are deleted, so that each
// starts from what it shows. The server's clock stands still: a reader types
// slower than a test, and a bucket that refilled between two commands
// would change a count the docs show.
func TestDocsRedisCLISessions(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, filepath.Join("..", "README.md"))
	steps := 0
	for _, f := range files {
		text, err := os.ReadFile(f)
		require.NoError(t, err)
		sessions := docSessions(string(text))
		if len(sessions) == 0 {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) {
			_, addr := startServer(t, Config{Clock: newStepClock().Now})
			c, ctx := newClient(t, addr, 2), ctxT(t)
			cli := startTTYCLI(t, addr)
			for _, session := range sessions {
				for _, st := range session {
					for _, k := range writtenKeys(t, c.Do(ctx, append([]any{"COMMAND", "GETKEYSANDFLAGS"}, fields(st.line)...)...).Val()) {
						require.NoError(t, c.Del(ctx, k).Err())
					}
				}
				for _, st := range session {
					var got []string
					for _, l := range strings.Split(cli.command(addr, st.line), "\n") {
						got = append(got, replyWords(l)...)
					}
					assert.Truef(t, sameShape(st.want, got), "%s: %s\n  docs:  %v\n  reply: %v", filepath.Base(f), st.line, st.want, got)
					steps++
				}
			}
		})
	}
	assert.Greater(t, steps, 40, "documented commands run")
}

func fields(line string) []any {
	var out []any
	for _, f := range strings.Fields(line) {
		out = append(out, f)
	}
	return out
}

// writtenKeys returns the keys of a COMMAND GETKEYSANDFLAGS reply that the
// command may write.
func writtenKeys(t *testing.T, reply any) []string {
	t.Helper()
	var keys []string
	list, _ := reply.([]any)
	for _, e := range list {
		kf := e.([]any)
		for _, f := range kf[1].([]any) {
			if f == "RW" || f == "OW" || f == "RM" {
				keys = append(keys, kf[0].(string))
				break
			}
		}
	}
	return keys
}

// redisCLISection returns the command lines of docs/clients.md's redis-cli
// section, without their comments.
func redisCLISection(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join("..", "docs", "clients.md"))
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(text), "\n## redis-cli\n")
	require.True(t, ok, "docs/clients.md has a redis-cli section")
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		lines = append(lines, strings.TrimSpace(docComment.ReplaceAllString(l, "")))
	}
	return lines
}

// TestClientsDocRedisCLI runs every line of docs/clients.md's redis-cli
// section: the interactive one in a terminal, the others with bash, against
// a server (port 6379 in the docs) and a three-node cluster that answers
// -MOVED (port 7001).
func TestClientsDocRedisCLI(t *testing.T) {
	lines := redisCLISection(t)
	require.Len(t, lines, 6)
	_, addr := startServer(t, Config{})
	nodes := startTestCluster(t, 3, clusterOpts{redirect: true})
	_, port, _ := strings.Cut(addr, ":")
	_, node, _ := strings.Cut(nodes[0].addr, ":")
	dir := t.TempDir()
	var load strings.Builder
	for i := range 1000 {
		load.WriteString(respCmd("RL.SLIDE", "load:"+strconv.Itoa(i), "5", "60"))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "commands.resp"), []byte(load.String()), 0o644))
	for _, line := range lines {
		if line == "redis-cli -p 6379" {
			cli := startTTYCLI(t, addr)
			cli.typeText("RL.SLIDE ")
			cli.waitFor("RL.SLIDE key limit window [COST cost] [PEEK]")
			cli.run("send-keys", "C-u") // erase the line
			assert.Contains(t, cli.command(addr, "help @rl"), "RL.SLIDE key limit window [COST cost] [PEEK]")
			continue
		}
		run := strings.NewReplacer("-p 6379", "-h 127.0.0.1 -p "+port, "-p 7001", "-h 127.0.0.1 -p "+node,
			"127.0.0.1:7001", nodes[0].addr).Replace(line)
		out := runShell(t, dir, run)
		assert.NotContainsf(t, out, "ERR", "%s", line)
		assert.NotContainsf(t, out, "MOVED", "%s", line)
		switch {
		case strings.Contains(line, "--pipe"):
			assert.Contains(t, out, "errors: 0, replies: 1000")
		case strings.Contains(line, "--cluster check"):
			assert.Contains(t, out, "[OK] All 16384 slots covered.")
		case strings.HasPrefix(line, "printf"):
			assert.Contains(t, out, "algorithm\nslide\n")
		default:
			assert.Lenf(t, strings.Fields(out), 5, "%s: a decision", line)
		}
	}
	// Without -c, a node that does not own the key answers -MOVED, which -c followed.
	key := "user:42"
	other := nodes[0]
	if ownerOf(nodes, key) == other {
		other = nodes[1]
	}
	_, otherPort, _ := strings.Cut(other.addr, ":")
	assert.Contains(t, runShell(t, dir, "redis-cli -h 127.0.0.1 -p "+otherPort+" RL.SLIDE "+key+" 3 60"), "MOVED")
}

// runShell runs line with bash in dir and returns its output; it skips the
// test where redis-cli is not installed.
func runShell(t *testing.T, dir, line string) string {
	t.Helper()
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("redis-cli is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", line)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s: %s", line, out)
	return string(out)
}

// TestClusterDocRedisCLI runs docs/cluster.md's redis-cli lines against a
// three-node cluster, its nodes in the docs' ports' places.
func TestClusterDocRedisCLI(t *testing.T) {
	text, err := os.ReadFile(filepath.Join("..", "docs", "cluster.md"))
	require.NoError(t, err)
	nodes := startTestCluster(t, 3, clusterOpts{})
	ports := strings.NewReplacer("-p 7001", "-h 127.0.0.1 -p "+portOf(nodes[0].addr),
		"-p 7002", "-h 127.0.0.1 -p "+portOf(nodes[1].addr), "-p 7003", "-h 127.0.0.1 -p "+portOf(nodes[2].addr))
	ran := 0
	for _, line := range strings.Split(string(text), "\n") {
		cmd, ok := strings.CutPrefix(line, "$ redis-cli ")
		if !ok {
			continue
		}
		cmd = "redis-cli " + strings.TrimSpace(docComment.ReplaceAllString(cmd, ""))
		out := runShell(t, t.TempDir(), ports.Replace(cmd))
		assert.NotContainsf(t, out, "ERR", "%s", cmd)
		assert.NotEmptyf(t, strings.TrimSpace(out), "%s", cmd)
		ran++
	}
	assert.Equal(t, 3, ran, "docs/cluster.md's redis-cli lines")
}

func portOf(addr string) string {
	_, port, _ := strings.Cut(addr, ":")
	return port
}
