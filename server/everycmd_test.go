package server

import (
	"strings"
	"testing"

	"github.com/rlstore/rlstore/server/internal/auth"
	"github.com/rlstore/rlstore/server/internal/durable"
	"github.com/rlstore/rlstore/server/internal/keyspace"
	"github.com/rlstore/rlstore/server/internal/multi"
	"github.com/rlstore/rlstore/server/internal/route"
	"github.com/stretchr/testify/assert"
)

// callCase is one command every client library test sends through its
// generic call, and the error reply it must get ("" for none).
type callCase struct {
	args    []string
	wantErr string
}

// testPass is the password the client library tests' server requires, so
// that each library's AUTH path runs too.
const testPass = "s3cret"

// everyCommand is a call of every command and subcommand in the table that
// a pooled client can send through its generic call, in an order in which
// each succeeds. The commands that change the connection's mode (QUIT,
// SHUTDOWN, MONITOR, SUBSCRIBE, MULTI/EXEC/DISCARD, HELLO) are covered by
// connModeCommands and by each library's own transaction API.
func everyCommand() []callCase {
	ok := func(args ...string) callCase { return callCase{args: args} }
	return []callCase{
		ok("PING"), ok("PING", "hi"), ok("ECHO", "hi"), ok("SELECT", "0"), ok("AUTH", testPass),
		ok("AUTH", "default", testPass),
		ok("CLIENT", "ID"), ok("CLIENT", "SETNAME", "every"), ok("CLIENT", "GETNAME"),
		ok("CLIENT", "SETINFO", "LIB-NAME", "every"), ok("CLIENT", "INFO"), ok("CLIENT", "LIST"),
		ok("CLIENT", "KILL", "ID", "999999"), ok("CLIENT", "HELP"),
		ok("CLIENT", "TRACKING", "ON", "OPTIN"), ok("CLIENT", "CACHING", "YES"), ok("CLIENT", "TRACKINGINFO"),
		ok("CLIENT", "GETREDIR"),
		ok("COMMAND"), ok("COMMAND", "COUNT"), ok("COMMAND", "INFO", "rl.slide"), ok("COMMAND", "DOCS", "rl.slide"),
		ok("COMMAND", "LIST"), ok("COMMAND", "HELP"), ok("COMMAND", "GETKEYS", "RL.SLIDE", "k", "5", "60"),
		ok("COMMAND", "GETKEYSANDFLAGS", "DEL", "a", "b"),
		ok("CONFIG", "GET", "maxmemory"), ok("CONFIG", "SET", "maxclients", "10000"), ok("CONFIG", "HELP"),
		ok("TIME"), {[]string{"SAVE"}, durable.ErrNoPersistence}, {[]string{"BGSAVE"}, durable.ErrNoPersistence}, ok("LASTSAVE"),
		ok("INFO"), ok("INFO", "server"),
		ok("SLOWLOG", "GET"), ok("SLOWLOG", "GET", "1"), ok("SLOWLOG", "LEN"), ok("SLOWLOG", "RESET"), ok("SLOWLOG", "HELP"),
		ok("ACL", "WHOAMI"), ok("ACL", "LIST"), ok("ACL", "USERS"), ok("ACL", "HELP"),
		{[]string{"ACL", "LOAD"}, auth.ErrNoACLFile},
		ok("LATENCY", "LATEST"), ok("LATENCY", "RESET"), ok("LATENCY", "HELP"),
		ok("RL.SLIDE", "every:slide", "10", "60"), ok("RL.SLIDE", "every:slide", "10", "60", "COST", "2", "PEEK"),
		ok("RL.TOKEN", "every:token", "10", "1", "1s"), ok("RL.FIXED", "every:fixed", "10", "1m"),
		ok("RL.LOG", "every:log", "10", "60"), ok("RL.LEAKY", "every:leaky", "10", "1", "1s"),
		ok("CL.THROTTLE", "every:gcra", "15", "30", "60"),
		ok("RL.ACQUIRE", "every:lease", "2", "10s", "ID", "a"), ok("RL.RENEW", "every:lease", "a", "20s"),
		ok("RL.RELEASE", "every:lease", "a"),
		ok("RL.RESERVE", "every:budget", "TOKEN", "1000", "100", "1m", "COST", "50", "TTL", "1m", "ID", "r"),
		ok("RL.COMMIT", "every:budget", "r", "ACTUAL", "20"), ok("RL.CANCEL", "every:budget", "r"),
		ok("RL.REFUND", "every:budget", "COST", "5"),
		ok("GCRA", "every:gcra", "15", "30", "60"), ok("THROTTLE", "every:gcra", "16", "30", "60", "2"),
		ok("RL.POLICY", "SET", "every", "SLIDE", "10", "60", "TOKEN", "5", "1", "1s"),
		ok("RL.POLICY", "GET", "every"), ok("RL.POLICY", "LIST"), ok("RL.CHECK", "every", "every:user"),
		ok("RL.POLICY", "DEL", "every"), ok("RL.POLICY", "HELP"), ok("RL.INFO", "every:slide"),
		ok("EXISTS", "every:slide", "every:token"), ok("TYPE", "every:slide"), ok("PTTL", "every:slide"),
		ok("TTL", "every:slide"), ok("SCAN", "0", "MATCH", "every:*", "COUNT", "100"), ok("KEYS", "every:*"),
		ok("DBSIZE"), ok("MEMORY", "USAGE", "every:slide"), ok("MEMORY", "HELP"),
		ok("OBJECT", "ENCODING", "every:slide"), {[]string{"OBJECT", "FREQ", "every:slide"}, keyspace.ErrNoFreq},
		{[]string{"OBJECT", "IDLETIME", "every:slide"}, keyspace.ErrNoIdle}, ok("OBJECT", "REFCOUNT", "every:slide"),
		ok("OBJECT", "HELP"), {[]string{"WATCH", "every:slide"}, multi.ErrNoWatch}, ok("UNWATCH"),
		ok("UNSUBSCRIBE"), ok("DEL", "every:slide", "every:token"), ok("FLUSHALL"), ok("FLUSHDB"),
		ok("SWAPDB", "0", "0"), {[]string{"MOVE", "every:slide", "1"}, errDBIndex},
		ok("READONLY"), ok("READWRITE"), ok("ASKING"), ok("CLUSTER", "KEYSLOT", "every:slide"), ok("CLUSTER", "HELP"),
		{[]string{"CLUSTER", "INFO"}, route.ErrNoCluster}, {[]string{"CLUSTER", "SLOTS"}, route.ErrNoCluster},
		{[]string{"CLUSTER", "SHARDS"}, route.ErrNoCluster}, {[]string{"CLUSTER", "NODES"}, route.ErrNoCluster},
		{[]string{"CLUSTER", "MYID"}, route.ErrNoCluster}, ok("RL.CLUSTER", "HELP"),
		{[]string{"CLUSTER", "COUNTKEYSINSLOT", "0"}, route.ErrNoCluster}, {[]string{"CLUSTER", "GETKEYSINSLOT", "0", "1"}, route.ErrNoCluster},
		{[]string{"CLUSTER", "LINKS"}, route.ErrNoCluster}, {[]string{"CLUSTER", "REPLICAS", "x"}, route.ErrNoCluster},
		{[]string{"CLUSTER", "SLAVES", "x"}, route.ErrNoCluster},
		{[]string{"RL.CLUSTER", "NODES"}, route.ErrNoCluster}, {[]string{"RL.CLUSTER", "OWNER", "every:slide"}, route.ErrNoCluster},
		{[]string{"RL.CLUSTER", "INFO"}, route.ErrNoCluster}, {[]string{"RL.CLUSTER", "FORGET", "every"}, route.ErrNoCluster},
		{[]string{"RL.CLUSTER", "SETSLOT", "0", "STABLE"}, route.ErrNoCluster},
		{[]string{"RL.PEER", "HELLO", "every"}, route.ErrNoCluster},
		{[]string{"RL.HOP", "1", "2", "PING"}, route.ErrNotPeer},
	}
}

// connModeCommands are the commands everyCommand leaves out, each tested elsewhere.
var connModeCommands = []string{"quit", "shutdown", "monitor", "subscribe", "multi", "exec", "discard", "hello"}

// TestEveryCommandIsCalled keeps everyCommand complete: a new command or
// subcommand fails here until the client library tests call it.
func TestEveryCommandIsCalled(t *testing.T) {
	s := newTestServer(t, Config{})
	called := map[string]bool{}
	for _, n := range connModeCommands {
		called[n] = true
	}
	for _, cc := range everyCommand() {
		name := strings.ToLower(cc.args[0])
		if cm := s.table.Lookup(name); cm != nil && len(cm.Subs) > 0 && len(cc.args) > 1 {
			name += "|" + strings.ToLower(cc.args[1])
		}
		called[name] = true
	}
	for name, cm := range s.table.Names() {
		if strings.HasPrefix(name, "test.") {
			continue
		}
		if len(cm.Subs) == 0 {
			assert.Truef(t, called[name], "everyCommand does not call %s", name)
		}
		for _, sc := range cm.Subs {
			assert.Truef(t, called[sc.Name], "everyCommand does not call %s", sc.Name)
		}
	}
}
