package server

import "github.com/rlstore/rlstore/server/internal/core"

// cmdSpec is what COMMAND INFO says of a command beyond its run: the Redis
// flags the table entry does not set itself (the entry keeps the flags that
// change how rlstore runs it), its explicit ACL categories (register adds
// those Redis derives from the flags: @write, @read, @admin, @dangerous,
// @pubsub, @fast or else @slow) and its key specs. COMMAND GETKEYS, the key
// positions of COMMAND INFO and the routing of keyed commands all read the
// key specs.
type cmdSpec struct {
	flags cmdFlags
	acl   aclCats
	keys  []keySpec
}

// The ACL categories and key spec flags, as the declarations name them.
const (
	catKeyspace    = core.CatKeyspace
	catRead        = core.CatRead
	catWrite       = core.CatWrite
	catPubsub      = core.CatPubsub
	catAdmin       = core.CatAdmin
	catFast        = core.CatFast
	catSlow        = core.CatSlow
	catDangerous   = core.CatDangerous
	catConnection  = core.CatConnection
	catTransaction = core.CatTransaction
	catRL          = core.CatRL

	keyRO     = core.KeyRO
	keyRW     = core.KeyRW
	keyOW     = core.KeyOW
	keyRM     = core.KeyRM
	keyAccess = core.KeyAccess
	keyUpdate = core.KeyUpdate
	keyInsert = core.KeyInsert
	keyDelete = core.KeyDelete
)

// spec is sp as the table takes it.
func (sp cmdSpec) spec() core.Spec { return core.Spec{Flags: sp.flags, ACL: sp.acl, Keys: sp.keys} }

// one is the key spec of a command with one key at index.
func one(flags keyFlags, index int) []keySpec {
	return []keySpec{{Flags: flags, Index: index, Step: 1}}
}

// rest is the key spec of a command whose every argument from index on is a key.
func rest(flags keyFlags, index int) []keySpec {
	return []keySpec{{Flags: flags, Index: index, LastKey: -1, Step: 1}}
}

// commandSpecs is every command's cmdSpec, keyed by the table's names
// ("client|list"). Redis's commands have Redis 7's flags, categories and
// key specs (TestCommandInfoMatchesRedis holds them to redis-server's);
// rlstore's own are @rl, and flagged as Redis would flag them: a decision
// is a write that may add a key (denyoom) in O(1) (fast), like INCR.
func commandSpecs() map[string]cmdSpec {
	const (
		ls    = flagLoading | flagStale
		nls   = flagNoScript | ls
		admin = flagAdmin | nls
		conn  = catConnection
	)
	decision := cmdSpec{flags: flagWrite | flagDenyOOM | flagFast, acl: catRL, keys: one(keyRW|keyAccess|keyUpdate, 1)}
	specs := map[string]cmdSpec{ // the decisions declare theirs in their entries (decisionEntry)
		"rl.acquire": decision, "rl.renew": {flags: flagWrite | flagFast, acl: catRL, keys: one(keyRW|keyUpdate, 1)},
		"rl.release": {flags: flagWrite | flagFast, acl: catRL, keys: one(keyRW|keyUpdate, 1)},
		"rl.reserve": decision, "rl.commit": {flags: flagWrite | flagFast, acl: catRL, keys: one(keyRW|keyUpdate, 1)},
		"rl.cancel": {flags: flagWrite | flagFast, acl: catRL, keys: one(keyRW|keyUpdate, 1)},
		"rl.refund": {flags: flagWrite | flagFast, acl: catRL, keys: one(keyRW|keyUpdate, 1)},
		"gcra":      {flags: decision.flags, keys: decision.keys}, "throttle": {flags: decision.flags, keys: decision.keys}, // other servers' names: not @rl
		"rl.info":   {flags: flagReadonly | flagFast, acl: catKeyspace | catRL, keys: one(keyRO|keyAccess, 1)},
		"rl.policy": {acl: catRL}, "rl.policy|set": {flags: flagDenyOOM, acl: catRL},
		"rl.policy|get": {flags: flagReadonly | flagFast, acl: catRL}, "rl.policy|del": {acl: catRL},
		"rl.policy|list": {flags: flagReadonly, acl: catRL}, "rl.policy|help": {flags: ls, acl: catRL},
		"rl.cluster": {acl: catRL}, "rl.cluster|nodes": {flags: flagStale, acl: catRL},
		"rl.cluster|owner": {flags: flagStale, acl: catRL}, "rl.cluster|info": {flags: flagStale, acl: catRL},
		"rl.cluster|help": {flags: ls, acl: catRL}, "rl.cluster|forget": {flags: flagAdmin, acl: catRL},
		"rl.peer": {flags: nls, acl: conn | catRL},
		"rl.hop":  {flags: ls, acl: catRL},

		"ping": {flags: flagFast, acl: conn}, "echo": {flags: ls | flagFast, acl: conn},
		"quit":   {flags: nls | flagFast | flagAllowBusy, acl: conn},
		"select": {flags: ls | flagFast, acl: conn},
		"auth":   {flags: nls | flagFast | flagAllowBusy, acl: conn}, "hello": {flags: nls | flagFast | flagAllowBusy, acl: conn},
		"multi": {flags: nls | flagFast | flagAllowBusy, acl: catTransaction}, "exec": {flags: nls | flagSkipSlowlog, acl: catTransaction},
		"discard": {flags: nls | flagFast | flagAllowBusy, acl: catTransaction},
		"watch":   {flags: nls | flagFast | flagAllowBusy, acl: catTransaction, keys: rest(keyRO, 1)},
		"unwatch": {flags: nls | flagFast | flagAllowBusy, acl: catTransaction},

		"subscribe": {flags: flagPubsub | nls}, "unsubscribe": {flags: flagPubsub | nls},
		"monitor": {flags: admin},

		"time": {flags: ls | flagFast}, "info": {flags: ls, acl: catDangerous},
		"save":     {flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagNoTx},
		"bgsave":   {flags: flagAdmin | flagNoScript | flagNoAsyncLoading},
		"lastsave": {flags: ls | flagFast, acl: catAdmin | catDangerous},
		"shutdown": {flags: admin | flagNoTx | flagAllowBusy},
		"config":   {}, "config|get": {flags: admin}, "config|set": {flags: admin}, "config|help": {flags: ls},
		"command": {flags: ls, acl: conn},
		"client":  {}, "client|help": {flags: ls, acl: conn},
		"cluster": {}, "cluster|help": {flags: ls},
		"readonly": {flags: ls | flagFast, acl: conn}, "readwrite": {flags: ls | flagFast, acl: conn},
		"asking": {flags: flagFast, acl: conn},
	}
	for _, sub := range []string{"count", "info", "docs", "list", "help", "getkeys", "getkeysandflags"} {
		specs["command|"+sub] = cmdSpec{flags: ls, acl: conn}
	}
	// Some are Redis's subcommands rlstore does not have yet, declared as
	// Redis declares them for whoever adds them.
	for _, sub := range []string{
		"acl|setuser", "acl|getuser", "acl|deluser", "acl|log", "acl|save", "acl|dryrun",
		"config|rewrite", "config|resetstat"} {
		specs[sub] = cmdSpec{flags: admin}
	}
	specs["acl|cat"], specs["acl|genpass"] = cmdSpec{flags: nls}, cmdSpec{flags: nls}
	for _, sub := range []string{"id", "setname", "getname", "setinfo", "info", "tracking", "caching", "getredir", "trackinginfo"} {
		specs["client|"+sub] = cmdSpec{flags: nls, acl: conn}
	}
	for _, sub := range []string{"list", "kill"} {
		specs["client|"+sub] = cmdSpec{flags: admin, acl: conn}
	}
	for _, sub := range []string{"slots", "shards", "nodes", "myid", "keyslot", "info", "countkeysinslot", "getkeysinslot", "links"} {
		specs["cluster|"+sub] = cmdSpec{flags: flagStale}
	}
	for _, sub := range []string{"replicas", "slaves"} {
		specs["cluster|"+sub] = cmdSpec{flags: flagAdmin | flagStale}
	}
	return specs
}
