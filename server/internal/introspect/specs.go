package introspect

import "github.com/rlstore/rlstore/server/internal/core"

// The flags, ACL categories and key spec flags, as the specs name them.
const (
	flagWrite          = core.FlagWrite
	flagReadonly       = core.FlagReadonly
	flagDenyOOM        = core.FlagDenyOOM
	flagAdmin          = core.FlagAdmin
	flagPubsub         = core.FlagPubsub
	flagNoScript       = core.FlagNoScript
	flagLoading        = core.FlagLoading
	flagStale          = core.FlagStale
	flagSkipSlowlog    = core.FlagSkipSlowlog
	flagFast           = core.FlagFast
	flagNoAsyncLoading = core.FlagNoAsyncLoading
	flagNoTx           = core.FlagNoTx
	flagAllowBusy      = core.FlagAllowBusy

	catKeyspace    = core.CatKeyspace
	catAdmin       = core.CatAdmin
	catDangerous   = core.CatDangerous
	catConnection  = core.CatConnection
	catTransaction = core.CatTransaction
	catRL          = core.CatRL

	keyRO     = core.KeyRO
	keyRW     = core.KeyRW
	keyAccess = core.KeyAccess
	keyUpdate = core.KeyUpdate
)

// one is the key spec of a command with one key at index.
func one(flags core.KeyFlags, index int) []core.KeySpec {
	return []core.KeySpec{{Flags: flags, Index: index, Step: 1}}
}

// rest is the key spec of a command whose every argument from index on is a key.
func rest(flags core.KeyFlags, index int) []core.KeySpec {
	return []core.KeySpec{{Flags: flags, Index: index, LastKey: -1, Step: 1}}
}

// Specs is what COMMAND INFO says of each command beyond its run, keyed by
// the table's names ("client|list"): the Redis flags the table entry does
// not set itself (the entry keeps the flags that change how rlstore runs
// it), its explicit ACL categories (core.Command.Declare adds those Redis
// derives from the Flags: @write, @read, @admin, @dangerous, @pubsub,
// @fast or else @slow) and its key specs, for the commands that do not
// declare their own in their entries. COMMAND GETKEYS, the key positions
// of COMMAND INFO and the routing of keyed commands all read the key
// specs. Redis's commands have Redis 7's flags, categories and key specs
// (TestCommandInfoMatchesRedis holds them to redis-server's); rlstore's own
// are @rl, and flagged as Redis would flag them: a decision is a write
// that may add a key (denyoom) in O(1) (fast), like INCR.
func Specs() map[string]core.Spec {
	const (
		ls    = flagLoading | flagStale
		nls   = flagNoScript | ls
		admin = flagAdmin | nls
		conn  = catConnection
	)
	decision := core.Spec{Flags: flagWrite | flagDenyOOM | flagFast, ACL: catRL, Keys: one(keyRW|keyAccess|keyUpdate, 1)}
	specs := map[string]core.Spec{ // the decisions declare theirs in their entries (decisionEntry)
		"rl.acquire": decision, "rl.renew": {Flags: flagWrite | flagFast, ACL: catRL, Keys: one(keyRW|keyUpdate, 1)},
		"rl.release": {Flags: flagWrite | flagFast, ACL: catRL, Keys: one(keyRW|keyUpdate, 1)},
		"rl.reserve": decision, "rl.commit": {Flags: flagWrite | flagFast, ACL: catRL, Keys: one(keyRW|keyUpdate, 1)},
		"rl.cancel": {Flags: flagWrite | flagFast, ACL: catRL, Keys: one(keyRW|keyUpdate, 1)},
		"rl.refund": {Flags: flagWrite | flagFast, ACL: catRL, Keys: one(keyRW|keyUpdate, 1)},
		"gcra":      {Flags: decision.Flags, Keys: decision.Keys}, "throttle": {Flags: decision.Flags, Keys: decision.Keys}, // other servers' names: not @rl
		"rl.info":   {Flags: flagReadonly | flagFast, ACL: catKeyspace | catRL, Keys: one(keyRO|keyAccess, 1)},
		"rl.policy": {ACL: catRL}, "rl.policy|set": {Flags: flagDenyOOM, ACL: catRL},
		"rl.policy|get": {Flags: flagReadonly | flagFast, ACL: catRL}, "rl.policy|del": {ACL: catRL},
		"rl.policy|list": {Flags: flagReadonly, ACL: catRL}, "rl.policy|help": {Flags: ls, ACL: catRL},
		"rl.cluster": {ACL: catRL}, "rl.cluster|nodes": {Flags: flagStale, ACL: catRL},
		"rl.cluster|owner": {Flags: flagStale, ACL: catRL}, "rl.cluster|info": {Flags: flagStale, ACL: catRL},
		"rl.cluster|help": {Flags: ls, ACL: catRL}, "rl.cluster|forget": {Flags: flagAdmin, ACL: catRL},
		"rl.cluster|setslot": {Flags: flagAdmin, ACL: catRL},
		"rl.peer":            {Flags: nls, ACL: conn | catRL},
		"rl.hop":             {Flags: ls, ACL: catRL},

		"ping": {Flags: flagFast, ACL: conn}, "echo": {Flags: ls | flagFast, ACL: conn},
		"quit":   {Flags: nls | flagFast | flagAllowBusy, ACL: conn},
		"select": {Flags: ls | flagFast, ACL: conn},
		"auth":   {Flags: nls | flagFast | flagAllowBusy, ACL: conn}, "hello": {Flags: nls | flagFast | flagAllowBusy, ACL: conn},
		"multi": {Flags: nls | flagFast | flagAllowBusy, ACL: catTransaction}, "exec": {Flags: nls | flagSkipSlowlog, ACL: catTransaction},
		"discard": {Flags: nls | flagFast | flagAllowBusy, ACL: catTransaction},
		"watch":   {Flags: nls | flagFast | flagAllowBusy, ACL: catTransaction, Keys: rest(keyRO, 1)},
		"unwatch": {Flags: nls | flagFast | flagAllowBusy, ACL: catTransaction},

		"subscribe": {Flags: flagPubsub | nls}, "unsubscribe": {Flags: flagPubsub | nls},
		"monitor": {Flags: admin},

		"time": {Flags: ls | flagFast}, "info": {Flags: ls, ACL: catDangerous},
		"save":     {Flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagNoTx},
		"bgsave":   {Flags: flagAdmin | flagNoScript | flagNoAsyncLoading},
		"lastsave": {Flags: ls | flagFast, ACL: catAdmin | catDangerous},
		"shutdown": {Flags: admin | flagNoTx | flagAllowBusy},
		"config":   {}, "config|get": {Flags: admin}, "config|set": {Flags: admin}, "config|help": {Flags: ls},
		"command": {Flags: ls, ACL: conn},
		"client":  {}, "client|help": {Flags: ls, ACL: conn},
		"cluster": {}, "cluster|help": {Flags: ls},
		"readonly": {Flags: ls | flagFast, ACL: conn}, "readwrite": {Flags: ls | flagFast, ACL: conn},
		"asking": {Flags: flagFast, ACL: conn},
	}
	for _, sub := range []string{"count", "info", "docs", "list", "help", "getkeys", "getkeysandflags"} {
		specs["command|"+sub] = core.Spec{Flags: ls, ACL: conn}
	}
	// Some are Redis's subcommands rlstore does not have yet, declared as
	// Redis declares them for whoever adds them.
	for _, sub := range []string{
		"acl|setuser", "acl|getuser", "acl|deluser", "acl|log", "acl|save", "acl|dryrun",
		"config|rewrite", "config|resetstat"} {
		specs[sub] = core.Spec{Flags: admin}
	}
	specs["acl|cat"], specs["acl|genpass"] = core.Spec{Flags: nls}, core.Spec{Flags: nls}
	for _, sub := range []string{"id", "setname", "getname", "setinfo", "info", "tracking", "caching", "getredir", "trackinginfo"} {
		specs["client|"+sub] = core.Spec{Flags: nls, ACL: conn}
	}
	for _, sub := range []string{"list", "kill"} {
		specs["client|"+sub] = core.Spec{Flags: admin, ACL: conn}
	}
	for _, sub := range []string{"slots", "shards", "nodes", "myid", "keyslot", "info", "countkeysinslot", "getkeysinslot", "links"} {
		specs["cluster|"+sub] = core.Spec{Flags: flagStale}
	}
	for _, sub := range []string{"replicas", "slaves"} {
		specs["cluster|"+sub] = core.Spec{Flags: flagAdmin | flagStale}
	}
	return specs
}
