package server

// A pipelined batch of decisions is looked up faster when the store is
// told its keys first (shard.Map.Prefetch): their lookups' memory misses
// then overlap. When a batch has been read, prefetchBatch reads the keys of
// the decision commands that open it, up to prefetchMax of them, with a
// scan that only finds each request's first two arguments; the requests
// are parsed for real as they run.

const (
	prefetchMax = 16 // the most keys one batch prefetches
	minPrefetch = 60 // bytes of two small decision requests: a batch of one is not worth it
)

// prefetchBatch prefetches the keys of the decisions that open the batch
// in c's read buffer, or what is left of it. A batch longer than
// prefetchMax (a peer's forwarded requests, say) is prefetched again each
// time its prefetched keys have run (see prefetchNext).
func (s *Server) prefetchBatch(c *client) {
	c.prefetchLeft = 0
	rc := c.rc
	if rc.w-rc.r < minPrefetch || rc.batchEnd || !rc.p.idle() {
		return
	}
	keys := c.prefetch[:0]
	for b := rc.buf[rc.r:rc.w]; len(keys) < prefetchMax; {
		name, key, n := firstArgs(b)
		if n == 0 || !keyedDecision(name) {
			break
		}
		keys = append(keys, key)
		b = b[n:]
	}
	if len(keys) > 1 {
		s.cfg.Store.Prefetch(keys)
		c.prefetchLeft = len(keys)
	}
	clear(keys) // hold no reference to the read buffer
}

// prefetchNext counts a command run, and prefetches the next keys of the
// batch once those prefetched have all run.
func (s *Server) prefetchNext(c *client) {
	if c.prefetchLeft > 0 {
		if c.prefetchLeft--; c.prefetchLeft == 0 {
			s.prefetchBatch(c)
		}
	}
}

// keyedDecision reports whether name is a decision command whose key is its
// first argument: a native RL.<KIND> command or CL.THROTTLE.
func keyedDecision(name []byte) bool {
	switch len(name) {
	case 6:
		return equalFoldASCII(name, "rl.log")
	case 8:
		return equalFoldASCII(name, "rl.slide") || equalFoldASCII(name, "rl.token") ||
			equalFoldASCII(name, "rl.fixed") || equalFoldASCII(name, "rl.leaky")
	case 11:
		return equalFoldASCII(name, "cl.throttle")
	}
	return false
}

// firstArgs scans the RESP array request at the start of b and returns its
// first two arguments and its length, or n == 0 if b does not start with a
// whole array of at least two bulk strings. Of a request another node
// forwarded (RL.HOP level resp command key ...), it returns the command
// and its key. It checks only what it needs to find the request's end:
// the parser checks every request as it runs.
func firstArgs(b []byte) (name, key []byte, n int) {
	if len(b) == 0 || b[0] != '*' {
		return nil, nil, 0
	}
	count, i := scanLen(b, 1)
	if i == 0 || count < 2 {
		return nil, nil, 0
	}
	var first [5][]byte
	for a := range count {
		if i >= len(b) || b[i] != '$' {
			return nil, nil, 0
		}
		size, j := scanLen(b, i+1)
		if j == 0 || j+size+2 > len(b) || b[j+size] != '\r' || b[j+size+1] != '\n' {
			return nil, nil, 0
		}
		if a < len(first) {
			first[a] = b[j : j+size]
		}
		i = j + size + 2
	}
	if count >= 5 && equalFoldASCII(first[0], "rl.hop") {
		return first[3], first[4], i
	}
	return first[0], first[1], i
}

// scanLen reads the decimal length at b[i:] up to its CRLF and returns it
// and the index after the CRLF, or 0 for that index if there is none.
func scanLen(b []byte, i int) (int, int) {
	v, start := 0, i
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v = v*10 + int(b[i]-'0'); v > 1<<30 {
			return 0, 0
		}
	}
	if i == start || i+1 >= len(b) || b[i] != '\r' || b[i+1] != '\n' {
		return 0, 0
	}
	return v, i + 2
}
