package server

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

// declare adds sp to cm's entry; an entry may declare its categories and
// key specs itself instead (a decision's does, so that one entry is all a
// new one needs). Key positions written in the entry must agree with the
// key specs: two that differ are a programmer error.
func (cm *command) declare(sp cmdSpec) {
	cm.flags |= sp.flags
	cm.acl = impliedCategories(cm.flags, cm.acl|sp.acl)
	keys := sp.keys
	if keys == nil {
		keys = cm.keys
	}
	if keys == nil {
		return
	}
	first, last, step := legacyRange(keys)
	if cm.firstKey != 0 && (cm.firstKey != first || cm.lastKey != last || cm.keyStep != step) {
		panic("server: " + cm.name + "'s key positions differ from its key specs")
	}
	cm.keys, cm.firstKey, cm.lastKey, cm.keyStep = keys, first, last, step
}

// aclCats is a set of ACL categories, in the order Redis lists them.
type aclCats uint32

const (
	catKeyspace aclCats = 1 << iota
	catRead
	catWrite
	catPubsub
	catAdmin
	catFast
	catSlow
	catDangerous
	catConnection
	catTransaction
	catRL // rlstore's own commands
)

// names returns the categories' names, as COMMAND INFO lists them.
func (a aclCats) names() flagSet {
	all := []string{"@keyspace", "@read", "@write", "@pubsub", "@admin", "@fast", "@slow",
		"@dangerous", "@connection", "@transaction", "@rl"}
	out := flagSet{}
	for i, n := range all {
		if a&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// impliedCategories adds the categories Redis derives from a command's
// flags (setImplicitACLCategories), so that the two always agree.
func impliedCategories(f cmdFlags, a aclCats) aclCats {
	for _, imp := range []struct {
		flag cmdFlags
		cats aclCats
	}{{flagWrite, catWrite}, {flagReadonly, catRead}, {flagAdmin, catAdmin | catDangerous}, {flagPubsub, catPubsub}, {flagFast, catFast}} {
		if f&imp.flag != 0 {
			a |= imp.cats
		}
	}
	if a&catFast == 0 {
		a |= catSlow
	}
	return a
}

// keySpec is a Redis 7 key spec: the keys begin at argument index (the name
// is 0) and run to lastKey (0: that one; -1: the last argument; -2: the one
// before) every step arguments. rlstore's commands need no other form.
type keySpec struct {
	flags         keyFlags
	index         int
	lastKey, step int
}

// keyFlags are a key spec's flags, in the order Redis lists them.
type keyFlags uint16

const (
	keyRO keyFlags = 1 << iota
	keyRW
	keyOW
	keyRM
	keyAccess
	keyUpdate
	keyInsert
	keyDelete
)

func (k keyFlags) names() flagSet {
	all := []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete"}
	out := flagSet{}
	for i, n := range all {
		if k&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// one is the key spec of a command with one key at index.
func one(flags keyFlags, index int) []keySpec {
	return []keySpec{{flags: flags, index: index, step: 1}}
}

// rest is the key spec of a command whose every argument from index on is a key.
func rest(flags keyFlags, index int) []keySpec {
	return []keySpec{{flags: flags, index: index, lastKey: -1, step: 1}}
}

// legacyRange is COMMAND INFO's first key, last key and step, which Redis 7
// derives from the key specs and older clients route by.
func legacyRange(keys []keySpec) (first, last, step int) {
	if len(keys) == 0 {
		return 0, 0, 0
	}
	k := keys[0]
	last = k.lastKey
	if last >= 0 {
		last += k.index
	}
	return k.index, last, k.step
}

// keyArg is an argument that a key spec names as a key.
type keyArg struct {
	index int
	flags keyFlags
}

// keyIndexes appends to dst the arguments of a call of n arguments that keys
// name, or returns false if the call ends before a key it must hold.
func keyIndexes(keys []keySpec, n int, dst []keyArg) ([]keyArg, bool) {
	for _, k := range keys {
		last := k.lastKey
		if last >= 0 {
			last += k.index
		} else {
			last += n
		}
		if k.index >= n || last < k.index {
			return dst, false
		}
		for i := k.index; i <= last; i += k.step {
			dst = append(dst, keyArg{i, k.flags})
		}
	}
	return dst, true
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

		"del":    {flags: flagWrite, acl: catKeyspace, keys: rest(keyRM|keyDelete, 1)},
		"exists": {flags: flagReadonly | flagFast, acl: catKeyspace, keys: rest(keyRO, 1)},
		"type":   {flags: flagReadonly | flagFast, acl: catKeyspace, keys: one(keyRO, 1)},
		"pttl":   {flags: flagReadonly | flagFast, acl: catKeyspace, keys: one(keyRO|keyAccess, 1)},
		"ttl":    {flags: flagReadonly | flagFast, acl: catKeyspace, keys: one(keyRO|keyAccess, 1)},
		"scan":   {flags: flagReadonly, acl: catKeyspace}, "keys": {flags: flagReadonly, acl: catKeyspace | catDangerous},
		"dbsize":   {flags: flagReadonly | flagFast, acl: catKeyspace},
		"flushall": {flags: flagWrite, acl: catKeyspace | catDangerous}, "flushdb": {flags: flagWrite, acl: catKeyspace | catDangerous},
		"swapdb": {flags: flagWrite | flagFast, acl: catKeyspace | catDangerous},
		"move":   {flags: flagWrite | flagFast, acl: catKeyspace, keys: one(keyRW|keyAccess|keyUpdate, 1)},

		"memory": {}, "memory|usage": {flags: flagReadonly, keys: one(keyRO, 2)}, "memory|help": {flags: ls},
		"object": {}, "object|help": {flags: ls, acl: catKeyspace},
		"subscribe": {flags: flagPubsub | nls}, "unsubscribe": {flags: flagPubsub | nls},
		"monitor": {flags: admin},

		"time": {flags: ls | flagFast}, "info": {flags: ls, acl: catDangerous},
		"save":     {flags: flagAdmin | flagNoScript | flagNoAsyncLoading | flagNoTx},
		"bgsave":   {flags: flagAdmin | flagNoScript | flagNoAsyncLoading},
		"lastsave": {flags: ls | flagFast, acl: catAdmin | catDangerous},
		"shutdown": {flags: admin | flagNoTx | flagAllowBusy},
		"config":   {}, "config|get": {flags: admin}, "config|set": {flags: admin}, "config|help": {flags: ls},
		"slowlog": {}, "slowlog|help": {flags: ls},
		"latency": {}, "latency|help": {flags: ls},
		"acl": {}, "acl|help": {flags: ls}, "acl|whoami": {flags: nls},
		"command": {flags: ls, acl: conn},
		"client":  {}, "client|help": {flags: ls, acl: conn},
		"cluster": {}, "cluster|help": {flags: ls},
		"readonly": {flags: ls | flagFast, acl: conn}, "readwrite": {flags: ls | flagFast, acl: conn},
		"asking": {flags: flagFast, acl: conn},
	}
	for _, sub := range []string{"count", "info", "docs", "list", "help", "getkeys", "getkeysandflags"} {
		specs["command|"+sub] = cmdSpec{flags: ls, acl: conn}
	}
	for _, sub := range []string{"encoding", "freq", "idletime", "refcount"} {
		specs["object|"+sub] = cmdSpec{flags: flagReadonly, acl: catKeyspace, keys: one(keyRO, 2)}
	}
	for _, sub := range []string{"slowlog|get", "slowlog|len", "slowlog|reset"} {
		specs[sub] = cmdSpec{flags: flagAdmin | ls}
	}
	// Some are Redis's subcommands rlstore does not have yet, declared as
	// Redis declares them for whoever adds them.
	for _, sub := range []string{"latency|latest", "latency|reset", "acl|list", "acl|users", "acl|load",
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
