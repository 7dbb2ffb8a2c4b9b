package report

// Pair is an rlstore workload and the Redis workload doing the same job;
// Redis is "" when Redis+Lua has no counterpart.
type Pair struct {
	Native string `json:"native"`
	Redis  string `json:"redis"`
}

// Row is one pair at one depth.
type Row struct {
	Pair
	Pipeline int     `json:"pipeline"`
	Rlstore  *Result `json:"rlstore,omitempty"`
	RedisRes *Result `json:"redis_lua,omitempty"`
}
