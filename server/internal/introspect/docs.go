package introspect

import (
	"strings"

	"github.com/rlstore/rlstore/server/internal/core"
)

// Doc is what COMMAND DOCS says of a command beyond the command table:
// the version it appeared in (Redis's for Redis's commands, rlstore's for
// its own) and its arguments, from which redis-cli 7.2 and later build the
// hints it shows while a command is typed. Summary, if set, is used when the
// table has none.
type Doc struct {
	Since   string
	Summary string
	Args    []string // argument specs, see parseDocArg
}

// RLSince is the rlstore version that has every RL command as documented.
const RLSince = "1.0.0"

// Docs is every command's Doc but the cluster's, which the front adds,
// keyed by the table's command names ("client|tracking").
// An argument spec is one of:
//
//	name            a string argument called name
//	name:type       of Redis's argument types (key, integer, pattern, ...)
//	TOKEN name:type a value after a token, as COST n
//	A|B|C           one of these tokens
//	TOKEN           a token alone, as PEEK
//
// preceded by ? when optional and * when it may repeat.
func Docs() map[string]Doc {
	decision := func(summary, a, b string) Doc {
		args := []string{"key:key", a + ":integer"}
		if b != "" {
			args = append(args, b)
		}
		return Doc{Since: RLSince, Summary: summary, Args: append(args, "?COST cost:integer", "?PEEK")}
	}
	docs := map[string]Doc{
		"rl.slide": decision("Sliding window over per-second counters: admits if the last window seconds hold at most limit units", "limit", "window"),
		"rl.token": {Since: RLSince, Summary: "Token bucket: holds up to capacity tokens, refilled at rate per period", Args: []string{"key:key", "capacity:integer", "rate:integer", "period", "?COST cost:integer", "?PEEK"}},
		"rl.fixed": {Since: RLSince, Summary: "Fixed window counter, windows aligned to the epoch or (ANCHOR FIRST) started by their first hit",
			Args: []string{"key:key", "limit:integer", "window", "?COST cost:integer", "?PEEK", "?ANCHOR anchor"}},
		"rl.log":   decision("Sliding log: exact, records every admitted unit's time", "limit", "window"),
		"rl.leaky": {Since: RLSince, Summary: "Leaky bucket as a queue: admits with the delay before the request's turn", Args: []string{"key:key", "capacity:integer", "rate:integer", "period", "?COST cost:integer", "?PEEK"}},
		"cl.throttle": {Since: RLSince, Summary: "GCRA, compatible with redis-cell: replies limited, limit, remaining, retry_after, reset_after",
			Args: []string{"key:key", "max_burst:integer", "count:integer", "period:integer", "?quantity:integer"}},
		"rl.acquire":              {Since: RLSince, Args: []string{"key:key", "limit:integer", "ttl", "?ID id", "?COST cost:integer"}},
		"rl.renew":                {Since: RLSince, Args: []string{"key:key", "id", "ttl"}},
		"rl.release":              {Since: RLSince, Args: []string{"key:key", "id"}},
		"rl.reserve":              {Since: RLSince, Args: []string{"key:key", "SLIDE|FIXED|TOKEN|POLICY", "*param", "?COST cost:integer", "TTL ttl", "?ID id"}},
		"rl.commit":               {Since: RLSince, Args: []string{"key:key", "id", "ACTUAL actual:integer", "?POLICY policy"}},
		"rl.cancel":               {Since: RLSince, Args: []string{"key:key", "id", "?POLICY policy"}},
		"rl.refund":               {Since: RLSince, Args: []string{"key:key", "?SLIDE|FIXED|TOKEN", "*param", "COST cost:integer"}},
		"gcra":                    {Since: RLSince, Args: []string{"key:key", "max_burst:integer", "tokens_per_period:integer", "period:double", "?TOKENS tokens:integer"}},
		"throttle":                {Since: RLSince, Args: []string{"key:key", "max_burst:integer", "count_per_period:integer", "period:integer", "?quantity:integer"}},
		"rl.check":                {Since: RLSince, Args: []string{"policy", "key:key", "?COST cost:integer", "?PEEK"}},
		"rl.info":                 {Since: RLSince, Args: []string{"key:key"}},
		"rl.policy":               {Since: RLSince},
		"rl.policy|set":           {Since: RLSince, Args: []string{"name", "*rule", "?PENALTY duration", "?SHADOW"}},
		"rl.policy|get":           {Since: RLSince, Args: []string{"name"}},
		"rl.policy|del":           {Since: RLSince, Args: []string{"name"}},
		"rl.policy|list":          {Since: RLSince},
		"rl.policy|help":          {Since: RLSince},
		"ping":                    {Since: "1.0.0", Args: []string{"?message"}},
		"echo":                    {Since: "1.0.0", Args: []string{"message"}},
		"quit":                    {Since: "1.0.0"},
		"select":                  {Since: "1.0.0", Args: []string{"index:integer"}},
		"auth":                    {Since: "1.0.0", Args: []string{"?username", "password"}},
		"hello":                   {Since: "6.0.0", Args: []string{"?protover:integer", "?AUTH username", "?AUTH password", "?SETNAME clientname"}},
		"client":                  {Since: "2.4.0"},
		"client|id":               {Since: "5.0.0"},
		"client|setname":          {Since: "2.6.9", Args: []string{"connection-name"}},
		"client|getname":          {Since: "2.6.9"},
		"client|setinfo":          {Since: "7.2.0", Args: []string{"LIB-NAME|LIB-VER", "value"}},
		"client|info":             {Since: "6.2.0"},
		"client|list":             {Since: "2.4.0", Args: []string{"?TYPE type", "?*ID client-id:integer"}},
		"client|kill":             {Since: "2.4.0", Args: []string{"?ip:port", "?ID client-id:integer", "?ADDR ip:port", "?LADDR ip:port", "?USER username", "?SKIPME yes/no"}},
		"client|help":             {Since: "5.0.0"},
		"client|tracking":         {Since: "6.0.0", Args: []string{"ON|OFF", "?REDIRECT client-id:integer", "?*PREFIX prefix", "?BCAST", "?OPTIN", "?OPTOUT", "?NOLOOP"}},
		"client|caching":          {Since: "6.0.0", Args: []string{"YES|NO"}},
		"client|getredir":         {Since: "6.0.0"},
		"client|trackinginfo":     {Since: "6.2.0"},
		"command":                 {Since: "2.8.13"},
		"command|count":           {Since: "2.8.13"},
		"command|info":            {Since: "2.8.13", Args: []string{"?*command-name"}},
		"command|docs":            {Since: "7.0.0", Args: []string{"?*command-name"}},
		"command|list":            {Since: "7.0.0"},
		"command|help":            {Since: "5.0.0"},
		"command|getkeys":         {Since: "2.8.13", Args: []string{"command", "?*arg"}},
		"command|getkeysandflags": {Since: "7.0.0", Args: []string{"command", "?*arg"}},
		"config":                  {Since: "2.0.0"},
		"config|get":              {Since: "2.0.0", Args: []string{"*parameter:pattern"}},
		"config|set":              {Since: "2.0.0", Args: []string{"*parameter", "*value"}},
		"config|help":             {Since: "5.0.0"},
		"acl":                     {Since: "6.0.0"},
		"acl|whoami":              {Since: "6.0.0"},
		"acl|list":                {Since: "6.0.0"},
		"acl|users":               {Since: "6.0.0"},
		"acl|load":                {Since: "6.0.0"},
		"acl|help":                {Since: "6.0.0"},
		"slowlog":                 {Since: "2.2.12"},
		"slowlog|get":             {Since: "2.2.12", Args: []string{"?count:integer"}},
		"slowlog|len":             {Since: "2.2.12"},
		"slowlog|reset":           {Since: "2.2.12"},
		"slowlog|help":            {Since: "6.2.0"},
		"latency":                 {Since: "2.8.13"},
		"latency|latest":          {Since: "2.8.13"},
		"latency|reset":           {Since: "2.8.13", Args: []string{"*event"}},
		"latency|help":            {Since: "2.8.13"},
		"time":                    {Since: "2.6.0"},
		"save":                    {Since: "1.0.0"},
		"bgsave":                  {Since: "1.0.0", Args: []string{"?SCHEDULE"}},
		"lastsave":                {Since: "1.0.0"},
		"shutdown":                {Since: "1.0.0", Args: []string{"?NOSAVE|SAVE", "?NOW", "?FORCE"}},
		"info":                    {Since: "1.0.0", Args: []string{"?*section"}},
		"multi":                   {Since: "1.2.0"},
		"exec":                    {Since: "1.2.0"},
		"discard":                 {Since: "2.0.0"},
		"watch":                   {Since: "2.2.0", Args: []string{"*key:key"}},
		"unwatch":                 {Since: "2.2.0"},
		"del":                     {Since: "1.0.0", Summary: "Deletes keys' state; replies how many existed", Args: []string{"*key:key"}},
		"exists":                  {Since: "1.0.0", Summary: "Counts the keys that exist", Args: []string{"*key:key"}},
		"type":                    {Since: "1.0.0", Summary: "Returns the algorithm of a key's state, or none", Args: []string{"key:key"}},
		"pttl":                    {Since: "2.6.0", Summary: "Returns the ms until a key's state expires, -2 if it does not exist", Args: []string{"key:key"}},
		"ttl":                     {Since: "1.0.0", Summary: "Returns the seconds until a key's state expires, -2 if it does not exist", Args: []string{"key:key"}},
		"scan":                    {Since: "2.8.0", Summary: "Iterates the keys", Args: []string{"cursor:integer", "?MATCH pattern:pattern", "?COUNT count:integer", "?TYPE type"}},
		"keys":                    {Since: "1.0.0", Summary: "Returns the keys matching a pattern", Args: []string{"pattern:pattern"}},
		"dbsize":                  {Since: "1.0.0", Summary: "Returns the number of keys"},
		"flushall":                {Since: "1.0.0", Summary: "Deletes every key's state", Args: []string{"?ASYNC|SYNC"}},
		"flushdb":                 {Since: "1.0.0", Args: []string{"?ASYNC|SYNC"}},
		"swapdb":                  {Since: "4.0.0", Args: []string{"index1:integer", "index2:integer"}},
		"move":                    {Since: "1.0.0", Args: []string{"key:key", "db:integer"}},
		"monitor":                 {Since: "1.0.0"},
		"memory":                  {Since: "4.0.0"},
		"memory|usage":            {Since: "4.0.0", Args: []string{"key:key", "?SAMPLES count:integer"}},
		"memory|help":             {Since: "4.0.0"},
		"object":                  {Since: "2.2.3"},
		"object|encoding":         {Since: "2.2.3", Args: []string{"key:key"}},
		"object|freq":             {Since: "4.0.0", Args: []string{"key:key"}},
		"object|idletime":         {Since: "2.2.3", Args: []string{"key:key"}},
		"object|refcount":         {Since: "2.2.3", Args: []string{"key:key"}},
		"object|help":             {Since: "6.2.0"},
		"subscribe":               {Since: "2.0.0", Args: []string{"*channel"}},
		"unsubscribe":             {Since: "2.0.0", Args: []string{"?*channel"}},
	}
	return docs
}

// docArgs turns argument specs into COMMAND DOCS' argument maps.
func docArgs(specs []string) []any {
	out := make([]any, 0, len(specs))
	keys := 0
	for _, spec := range specs {
		a := parseDocArg(spec)
		if a.typ == "key" {
			a.keySpec, keys = keys, keys+1
		}
		out = append(out, a.pairs())
	}
	return out
}

// isArgType reports whether t is one of Redis 7's argument types in
// COMMAND DOCS. redis-cli 7.0 prints "Unknown type" for any other, at every start.
func isArgType(t string) bool {
	switch t {
	case "string", "integer", "double", "key", "pattern", "unix-time", "pure-token", "oneof", "block":
		return true
	}
	return false
}

// docArg is one parsed argument spec.
type docArg struct {
	name, typ, token string
	optional, multi  bool
	oneof            []string
	keySpec          int
}

func parseDocArg(spec string) docArg {
	var a docArg
	a.optional = strings.HasPrefix(spec, "?")
	spec = strings.TrimPrefix(spec, "?")
	a.multi = strings.HasPrefix(spec, "*")
	spec = strings.TrimPrefix(spec, "*")
	if tok, rest, ok := strings.Cut(spec, " "); ok {
		a.token, spec = tok, rest
	}
	a.name = spec
	if i := strings.LastIndexByte(spec, ':'); i >= 0 && isArgType(spec[i+1:]) {
		a.name, a.typ = spec[:i], spec[i+1:] // "ip:port" is a name: port is no type
	}
	switch {
	case a.typ != "":
	case strings.Contains(a.name, "|") && a.token == "":
		a.typ, a.oneof = "oneof", strings.Split(a.name, "|")
		a.name = strings.ToLower(strings.Join(a.oneof, "-"))
	case a.token == "" && a.name == strings.ToUpper(a.name) && strings.ToLower(a.name) != a.name:
		a.typ, a.token, a.name = "pure-token", a.name, strings.ToLower(a.name)
	default:
		a.typ = "string"
	}
	return a
}

// pairs is the argument's map, shaped as Redis 7's.
func (a docArg) pairs() []core.Pair {
	p := []core.Pair{{Key: "name", Val: a.name}, {Key: "type", Val: a.typ}}
	if a.typ == "key" {
		p = append(p, core.Pair{Key: "key_spec_index", Val: a.keySpec})
	}
	if a.token != "" {
		p = append(p, core.Pair{Key: "token", Val: a.token})
	}
	if a.oneof != nil {
		sub := make([]any, len(a.oneof))
		for i, t := range a.oneof {
			sub[i] = []core.Pair{{Key: "name", Val: strings.ToLower(t)}, {Key: "type", Val: "pure-token"}, {Key: "token", Val: t}}
		}
		p = append(p, core.Pair{Key: "arguments", Val: sub})
	}
	var flags core.FlagSet
	if a.optional {
		flags = append(flags, "optional")
	}
	if a.multi {
		flags = append(flags, "multiple")
		if a.token != "" && a.typ != "pure-token" {
			flags = append(flags, "multiple_token")
		}
	}
	if flags != nil {
		p = append(p, core.Pair{Key: "flags", Val: flags})
	}
	return p
}
