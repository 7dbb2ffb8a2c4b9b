// Package glob matches Redis glob patterns, as KEYS, SCAN MATCH, CONFIG GET
// and ACL key patterns use them.
package glob

// Match reports whether s matches the Redis glob pattern pat, byte by
// byte as Redis's stringmatchlen does: '*' matches any run of bytes, also
// none; '?' any one byte; "[abc]" one of the bytes listed, "[^abc]" one not
// listed, "[a-z]" one in a range; and "\x" the byte x itself.
//
// An unclosed '[' takes the rest of the pattern as its class, and a trailing
// '\' is literal, as in Redis. Two of Redis's quirks are not copied: a
// pattern of stars matches the empty key, and the '-' in "[a-]" is literal
// (Redis reads a range up to ']' and runs on past it).
//
// Unlike Redis's recursive matcher, this one remembers only the last '*' it
// passed, which is enough because a later '*' can absorb whatever an earlier
// one would have: the work is at most len(s)·len(pat), however many stars a
// hostile pattern holds.
func Match(pat, s []byte) bool {
	p, i := 0, 0
	star, mark := -1, 0 // the pattern just after the last '*', and where s stood then
	for i < len(s) {
		if p < len(pat) && pat[p] == '*' {
			p++
			star, mark = p, i
			continue
		}
		if p < len(pat) {
			if next, ok := globOne(pat, p, s[i]); ok {
				p, i = next, i+1
				continue
			}
		}
		if star < 0 {
			return false
		}
		mark++
		p, i = star, mark // let the last '*' absorb one more byte
	}
	for p < len(pat) && pat[p] == '*' {
		p++
	}
	return p == len(pat)
}

// globOne matches byte c against the single-byte token at pat[p], which is not
// '*'. It returns where the next token starts.
func globOne(pat []byte, p int, c byte) (int, bool) {
	switch {
	case pat[p] == '?':
		return p + 1, true
	case pat[p] == '[':
		return globClass(pat, p+1, c)
	case pat[p] == '\\' && p+1 < len(pat):
		return p + 2, pat[p+1] == c
	}
	return p + 1, pat[p] == c
}

// globClass matches c against the class that starts at pat[p], just after its '['.
func globClass(pat []byte, p int, c byte) (int, bool) {
	not := p < len(pat) && pat[p] == '^'
	if not {
		p++
	}
	in := false
	for p < len(pat) && pat[p] != ']' {
		switch {
		case pat[p] == '\\' && p+1 < len(pat):
			in = in || pat[p+1] == c
			p += 2
		case p+2 < len(pat) && pat[p+1] == '-' && pat[p+2] != ']':
			lo, hi := min(pat[p], pat[p+2]), max(pat[p], pat[p+2])
			in = in || (lo <= c && c <= hi)
			p += 3
		default:
			in = in || pat[p] == c
			p++
		}
	}
	if p < len(pat) {
		p++ // the closing ']'
	}
	return p, in != not
}
