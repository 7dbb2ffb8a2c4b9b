package server

import "strings"

// cmdDoc is what COMMAND DOCS says of a command beyond the command table:
// the version it appeared in (Redis's for Redis's commands, rlstore's for
// its own) and its arguments, from which redis-cli 7.2 and later build the
// hints it shows while a command is typed. summary, if set, is used when the
// table has none.
type cmdDoc struct {
	since   string
	summary string
	args    []string // argument specs, see parseDocArg
}

// rlSince is the rlstore version that has every RL command as documented.
const rlSince = "1.0.0"

// commandDocTable is keyed by the table's command names ("client|tracking").
// An argument spec is one of:
//
//	name            a string argument called name
//	name:type       of Redis's argument types (key, integer, pattern, ...)
//	TOKEN name:type a value after a token, as COST n
//	A|B|C           one of these tokens
//	TOKEN           a token alone, as PEEK
//
// preceded by ? when optional and * when it may repeat.
func commandDocTable() map[string]cmdDoc {
	decision := func(summary, a, b string) cmdDoc {
		args := []string{"key:key", a + ":integer"}
		if b != "" {
			args = append(args, b)
		}
		return cmdDoc{since: rlSince, summary: summary, args: append(args, "?COST cost:integer", "?PEEK")}
	}
	docs := map[string]cmdDoc{
		"rl.slide": decision("Sliding window over per-second counters: admits if the last window seconds hold at most limit units", "limit", "window"),
		"rl.token": {since: rlSince, summary: "Token bucket: holds up to capacity tokens, refilled at rate per period", args: []string{"key:key", "capacity:integer", "rate:integer", "period", "?COST cost:integer", "?PEEK"}},
		"rl.fixed": {since: rlSince, summary: "Fixed window counter, windows aligned to the epoch or (ANCHOR FIRST) started by their first hit",
			args: []string{"key:key", "limit:integer", "window", "?COST cost:integer", "?PEEK", "?ANCHOR anchor"}},
		"rl.log":   decision("Sliding log: exact, records every admitted unit's time", "limit", "window"),
		"rl.leaky": {since: rlSince, summary: "Leaky bucket as a queue: admits with the delay before the request's turn", args: []string{"key:key", "capacity:integer", "rate:integer", "period", "?COST cost:integer", "?PEEK"}},
		"cl.throttle": {since: rlSince, summary: "GCRA, compatible with redis-cell: replies limited, limit, remaining, retry_after, reset_after",
			args: []string{"key:key", "max_burst:integer", "count:integer", "period:integer", "?quantity:integer"}},
		"rl.acquire":              {since: rlSince, args: []string{"key:key", "limit:integer", "ttl", "?ID id", "?COST cost:integer"}},
		"rl.renew":                {since: rlSince, args: []string{"key:key", "id", "ttl"}},
		"rl.release":              {since: rlSince, args: []string{"key:key", "id"}},
		"rl.reserve":              {since: rlSince, args: []string{"key:key", "SLIDE|FIXED|TOKEN|POLICY", "*param", "?COST cost:integer", "TTL ttl", "?ID id"}},
		"rl.commit":               {since: rlSince, args: []string{"key:key", "id", "ACTUAL actual:integer", "?POLICY policy"}},
		"rl.cancel":               {since: rlSince, args: []string{"key:key", "id", "?POLICY policy"}},
		"rl.refund":               {since: rlSince, args: []string{"key:key", "?SLIDE|FIXED|TOKEN", "*param", "COST cost:integer"}},
		"gcra":                    {since: rlSince, args: []string{"key:key", "max_burst:integer", "tokens_per_period:integer", "period:double", "?TOKENS tokens:integer"}},
		"throttle":                {since: rlSince, args: []string{"key:key", "max_burst:integer", "count_per_period:integer", "period:integer", "?quantity:integer"}},
		"rl.check":                {since: rlSince, args: []string{"policy", "key:key", "?COST cost:integer", "?PEEK"}},
		"rl.info":                 {since: rlSince, args: []string{"key:key"}},
		"rl.policy":               {since: rlSince},
		"rl.policy|set":           {since: rlSince, args: []string{"name", "*rule", "?PENALTY duration", "?SHADOW"}},
		"rl.policy|get":           {since: rlSince, args: []string{"name"}},
		"rl.policy|del":           {since: rlSince, args: []string{"name"}},
		"rl.policy|list":          {since: rlSince},
		"rl.policy|help":          {since: rlSince},
		"ping":                    {since: "1.0.0", args: []string{"?message"}},
		"echo":                    {since: "1.0.0", args: []string{"message"}},
		"quit":                    {since: "1.0.0"},
		"select":                  {since: "1.0.0", args: []string{"index:integer"}},
		"auth":                    {since: "1.0.0", args: []string{"?username", "password"}},
		"hello":                   {since: "6.0.0", args: []string{"?protover:integer", "?AUTH username", "?AUTH password", "?SETNAME clientname"}},
		"client":                  {since: "2.4.0"},
		"client|id":               {since: "5.0.0"},
		"client|setname":          {since: "2.6.9", args: []string{"connection-name"}},
		"client|getname":          {since: "2.6.9"},
		"client|setinfo":          {since: "7.2.0", args: []string{"LIB-NAME|LIB-VER", "value"}},
		"client|info":             {since: "6.2.0"},
		"client|list":             {since: "2.4.0", args: []string{"?TYPE type", "?*ID client-id:integer"}},
		"client|kill":             {since: "2.4.0", args: []string{"?ip:port", "?ID client-id:integer", "?ADDR ip:port", "?LADDR ip:port", "?USER username", "?SKIPME yes/no"}},
		"client|help":             {since: "5.0.0"},
		"client|tracking":         {since: "6.0.0", args: []string{"ON|OFF", "?REDIRECT client-id:integer", "?*PREFIX prefix", "?BCAST", "?OPTIN", "?OPTOUT", "?NOLOOP"}},
		"client|caching":          {since: "6.0.0", args: []string{"YES|NO"}},
		"client|getredir":         {since: "6.0.0"},
		"client|trackinginfo":     {since: "6.2.0"},
		"command":                 {since: "2.8.13"},
		"command|count":           {since: "2.8.13"},
		"command|info":            {since: "2.8.13", args: []string{"?*command-name"}},
		"command|docs":            {since: "7.0.0", args: []string{"?*command-name"}},
		"command|list":            {since: "7.0.0"},
		"command|help":            {since: "5.0.0"},
		"command|getkeys":         {since: "2.8.13", args: []string{"command", "?*arg"}},
		"command|getkeysandflags": {since: "7.0.0", args: []string{"command", "?*arg"}},
		"config":                  {since: "2.0.0"},
		"config|get":              {since: "2.0.0", args: []string{"*parameter:pattern"}},
		"config|set":              {since: "2.0.0", args: []string{"*parameter", "*value"}},
		"config|help":             {since: "5.0.0"},
		"acl":                     {since: "6.0.0"},
		"acl|whoami":              {since: "6.0.0"},
		"acl|list":                {since: "6.0.0"},
		"acl|users":               {since: "6.0.0"},
		"acl|load":                {since: "6.0.0"},
		"acl|help":                {since: "6.0.0"},
		"slowlog":                 {since: "2.2.12"},
		"slowlog|get":             {since: "2.2.12", args: []string{"?count:integer"}},
		"slowlog|len":             {since: "2.2.12"},
		"slowlog|reset":           {since: "2.2.12"},
		"slowlog|help":            {since: "6.2.0"},
		"latency":                 {since: "2.8.13"},
		"latency|latest":          {since: "2.8.13"},
		"latency|reset":           {since: "2.8.13", args: []string{"*event"}},
		"latency|help":            {since: "2.8.13"},
		"time":                    {since: "2.6.0"},
		"save":                    {since: "1.0.0"},
		"bgsave":                  {since: "1.0.0", args: []string{"?SCHEDULE"}},
		"lastsave":                {since: "1.0.0"},
		"shutdown":                {since: "1.0.0", args: []string{"?NOSAVE|SAVE", "?NOW", "?FORCE"}},
		"info":                    {since: "1.0.0", args: []string{"?*section"}},
		"multi":                   {since: "1.2.0"},
		"exec":                    {since: "1.2.0"},
		"discard":                 {since: "2.0.0"},
		"watch":                   {since: "2.2.0", args: []string{"*key:key"}},
		"unwatch":                 {since: "2.2.0"},
		"del":                     {since: "1.0.0", summary: "Deletes keys' state; replies how many existed", args: []string{"*key:key"}},
		"exists":                  {since: "1.0.0", summary: "Counts the keys that exist", args: []string{"*key:key"}},
		"type":                    {since: "1.0.0", summary: "Returns the algorithm of a key's state, or none", args: []string{"key:key"}},
		"pttl":                    {since: "2.6.0", summary: "Returns the ms until a key's state expires, -2 if it does not exist", args: []string{"key:key"}},
		"ttl":                     {since: "1.0.0", summary: "Returns the seconds until a key's state expires, -2 if it does not exist", args: []string{"key:key"}},
		"scan":                    {since: "2.8.0", summary: "Iterates the keys", args: []string{"cursor:integer", "?MATCH pattern:pattern", "?COUNT count:integer", "?TYPE type"}},
		"keys":                    {since: "1.0.0", summary: "Returns the keys matching a pattern", args: []string{"pattern:pattern"}},
		"dbsize":                  {since: "1.0.0", summary: "Returns the number of keys"},
		"flushall":                {since: "1.0.0", summary: "Deletes every key's state", args: []string{"?ASYNC|SYNC"}},
		"flushdb":                 {since: "1.0.0", args: []string{"?ASYNC|SYNC"}},
		"swapdb":                  {since: "4.0.0", args: []string{"index1:integer", "index2:integer"}},
		"move":                    {since: "1.0.0", args: []string{"key:key", "db:integer"}},
		"monitor":                 {since: "1.0.0"},
		"memory":                  {since: "4.0.0"},
		"memory|usage":            {since: "4.0.0", args: []string{"key:key", "?SAMPLES count:integer"}},
		"memory|help":             {since: "4.0.0"},
		"object":                  {since: "2.2.3"},
		"object|encoding":         {since: "2.2.3", args: []string{"key:key"}},
		"object|freq":             {since: "4.0.0", args: []string{"key:key"}},
		"object|idletime":         {since: "2.2.3", args: []string{"key:key"}},
		"object|refcount":         {since: "2.2.3", args: []string{"key:key"}},
		"object|help":             {since: "6.2.0"},
		"subscribe":               {since: "2.0.0", args: []string{"*channel"}},
		"unsubscribe":             {since: "2.0.0", args: []string{"?*channel"}},
	}
	for name, d := range clusterCommandDocs() {
		docs[name] = d
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
func (a docArg) pairs() []pair {
	p := []pair{{"name", a.name}, {"type", a.typ}}
	if a.typ == "key" {
		p = append(p, pair{"key_spec_index", a.keySpec})
	}
	if a.token != "" {
		p = append(p, pair{"token", a.token})
	}
	if a.oneof != nil {
		sub := make([]any, len(a.oneof))
		for i, t := range a.oneof {
			sub[i] = []pair{{"name", strings.ToLower(t)}, {"type", "pure-token"}, {"token", t}}
		}
		p = append(p, pair{"arguments", sub})
	}
	var flags flagSet
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
		p = append(p, pair{"flags", flags})
	}
	return p
}
