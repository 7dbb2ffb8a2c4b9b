package core

// Flags are Redis's command flags, in the order COMMAND INFO lists them,
// then rlstore's own. An entry sets those that change how rlstore runs the
// command; the rest come from its Spec.
type Flags uint32

const (
	FlagWrite          Flags = 1 << iota // changes state
	FlagReadonly                         // reads keys and changes nothing
	FlagDenyOOM                          // may add state, so refused when memory is full
	FlagAdmin                            // administers the server; MONITOR does not show it
	FlagPubsub                           // SUBSCRIBE and UNSUBSCRIBE
	FlagNoScript                         // Redis's: not from a script
	FlagLoading                          // Redis's: runs while the data set loads
	FlagStale                            // Redis's: runs on a replica with stale data
	FlagSkipSlowlog                      // Redis's: EXEC, whose commands are logged each
	FlagFast                             // O(1) or O(log n)
	FlagNoAuth                           // allowed before AUTH
	FlagNoAsyncLoading                   // Redis's: not while a replica loads in the background
	FlagNoTx                             // refused inside MULTI ("no_multi")
	FlagAllowBusy                        // Redis's: runs while a script is busy
	RedisFlagCount           = iota      // how many of the flags are Redis's

	FlagNoQueue      Flags = 1 << (iota - 1) // runs at once even inside MULTI (MULTI, EXEC, DISCARD, QUIT, WATCH)
	FlagAllKeys                              // changes every key (FLUSHALL, FLUSHDB)
	FlagBarrier                              // runs keyed commands it does not name (EXEC's queue): under the handoff's barrier, and tracking reads its queue
	FlagCacheable                            // a read whose every argument is a key: a tracking client may cache its reply
	FlagPrefetch                             // its first key is prefetched when it comes pipelined (a decision on the store's key)
	FlagAnnounces                            // announces the keys it changed to CLIENT TRACKING itself (the decision seam), so the runner does not
	FlagKeepsCaching                         // leaves CLIENT CACHING's yes or no for the next command (CLIENT CACHING, MULTI)
	FlagOpensTx                              // opens a transaction (MULTI): a transaction sent whole to another node starts with it (Table.TxFrame)
	FlagRunsTx                               // runs the transaction (EXEC): a transaction sent whole to another node ends with it (Table.TxFrame)
)

// Names returns the Redis flags among f, as COMMAND INFO lists them.
func (f Flags) Names() []string {
	all := [RedisFlagCount]string{"write", "readonly", "denyoom", "admin", "pubsub", "noscript", "loading",
		"stale", "skip_slowlog", "fast", "no_auth", "no_async_loading", "no_multi", "allow_busy"}
	out := []string{}
	for i, n := range all {
		if f&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Cats is a set of ACL categories, in the order Redis lists them.
type Cats uint32

const (
	CatKeyspace Cats = 1 << iota
	CatRead
	CatWrite
	CatPubsub
	CatAdmin
	CatFast
	CatSlow
	CatDangerous
	CatConnection
	CatTransaction
	CatRL // rlstore's own commands
)

// Names returns the categories' names, as COMMAND INFO lists them.
func (a Cats) Names() []string {
	all := []string{"@keyspace", "@read", "@write", "@pubsub", "@admin", "@fast", "@slow",
		"@dangerous", "@connection", "@transaction", "@rl"}
	out := []string{}
	for i, n := range all {
		if a&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Implied adds to a the categories Redis derives from a command's flags
// (setImplicitACLCategories), so that the two always agree.
func Implied(f Flags, a Cats) Cats {
	for _, imp := range []struct {
		flag Flags
		cats Cats
	}{{FlagWrite, CatWrite}, {FlagReadonly, CatRead}, {FlagAdmin, CatAdmin | CatDangerous}, {FlagPubsub, CatPubsub}, {FlagFast, CatFast}} {
		if f&imp.flag != 0 {
			a |= imp.cats
		}
	}
	if a&CatFast == 0 {
		a |= CatSlow
	}
	return a
}

// KeySpec is a Redis 7 key spec: the keys begin at argument Index (the
// name is 0) and run to LastKey (0: that one; -1: the last argument; -2:
// the one before) every Step arguments. rlstore's commands need no other form.
type KeySpec struct {
	Flags         KeyFlags
	Index         int
	LastKey, Step int
}

// KeyFlags are a key spec's flags, in the order Redis lists them.
type KeyFlags uint16

const (
	KeyRO KeyFlags = 1 << iota
	KeyRW
	KeyOW
	KeyRM
	KeyAccess
	KeyUpdate
	KeyInsert
	KeyDelete
)

// Names returns the flags' names, as COMMAND INFO lists them.
func (k KeyFlags) Names() []string {
	all := []string{"RO", "RW", "OW", "RM", "access", "update", "insert", "delete"}
	out := []string{}
	for i, n := range all {
		if k&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// LegacyRange is COMMAND INFO's first key, last key and step, which Redis 7
// derives from the key specs and older clients route by.
func LegacyRange(keys []KeySpec) (first, last, step int) {
	if len(keys) == 0 {
		return 0, 0, 0
	}
	k := keys[0]
	last = k.LastKey
	if last >= 0 {
		last += k.Index
	}
	return k.Index, last, k.Step
}

// KeyArg is an argument that a key spec names as a key.
type KeyArg struct {
	Index int
	Flags KeyFlags
}

// KeyIndexes appends to dst the arguments of a call of n arguments that
// keys name, or returns false if the call ends before a key it must hold.
func KeyIndexes(keys []KeySpec, n int, dst []KeyArg) ([]KeyArg, bool) {
	for _, k := range keys {
		last := k.LastKey
		if last >= 0 {
			last += k.Index
		} else {
			last += n
		}
		if k.Index >= n || last < k.Index {
			return dst, false
		}
		for i := k.Index; i <= last; i += k.Step {
			dst = append(dst, KeyArg{i, k.Flags})
		}
	}
	return dst, true
}

// Spec is what COMMAND INFO says of a command beyond its run: the Redis
// flags the table entry does not set itself (the entry keeps the flags that
// change how rlstore runs it), its explicit ACL categories (Declare adds
// those Redis derives from the flags) and its key specs. COMMAND GETKEYS,
// the key positions of COMMAND INFO and the routing of keyed commands all
// read the key specs.
type Spec struct {
	Flags Flags
	ACL   Cats
	Keys  []KeySpec
}
