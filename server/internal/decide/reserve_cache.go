package decide

import (
	"encoding/binary"

	"github.com/rlstore/rlstore/shard"
)

// The most arguments and bytes of them a reserveCache keeps: the rule,
// its parameters and two options (TOKEN 100000 100000 60 COST 10 TTL 30s
// is 8 and 31).
const (
	reserveCacheArgs  = 10
	reserveCacheBytes = 64
)

// reserveCache holds the arguments of a connection's last RL.RESERVE from
// its rule up to a last ID option (args[2:m], m = len(args)-2 if args end
// in ID id), and the request they parsed into, but for its id. A pipeline
// of reservations mostly repeats one rule, cost and TTL and only the id
// changes, and comparing their bytes costs less than half of parsing and
// checking them again (RL.RESERVE's parsing took about 960 instructions
// without the cache and takes 430 with it). Parsing is a function
// of the bytes alone, so a hit gives what parsing would; only arguments
// that parsed without error are kept.
type reserveCache struct {
	n     int // arguments kept; 0: none
	lens  [reserveCacheArgs]uint8
	words [reserveCacheArgs]uint64 // argWord of each argument of at most 8 bytes
	raw   [reserveCacheBytes]byte  // the longer arguments' bytes, one after the other
	req   shard.ReserveRequest     // ID unset
}

// argWord packs the bytes of a, of at most 8, into a word that, with
// len(a), tells them apart: two 4-byte loads that overlap cover 4 to 8
// bytes, and the first, middle and last byte 1 to 3. Comparing an argument
// this way costs about a third of comparing it byte by byte.
func argWord(a []byte) uint64 {
	n := len(a)
	if n >= 4 {
		return uint64(binary.LittleEndian.Uint32(a)) | uint64(binary.LittleEndian.Uint32(a[n-4:]))<<32
	}
	if n > 0 {
		return uint64(a[0]) | uint64(a[n/2])<<8 | uint64(a[n-1])<<16
	}
	return 0
}

// reserveCached splits RL.RESERVE's arguments args (at least 4) into what
// a reserveCache keeps, args[2:m], and the id of a last ID option, nil if
// they do not end in one.
func reserveCached(args [][]byte) (rest [][]byte, id []byte) {
	m := len(args)
	if m >= 6 && isWord(args[m-2], "id") {
		return args[2 : m-2], args[m-1]
	}
	return args[2:], nil
}

// parse sets r to the request args parse into, but for its ID, and
// returns the id they name (nil: none), if the cache holds their bytes and
// the id is valid; ok is false, and r unset, if they must be parsed.
func (c *reserveCache) parse(args [][]byte, r *shard.ReserveRequest) (id []byte, ok bool) {
	rest, id := reserveCached(args)
	if !c.hit(rest) || (id != nil && (len(id) < 1 || len(id) > maxLeaseID)) {
		return nil, false
	}
	*r = c.req
	return id, true
}

// hit reports whether args are the bytes c holds.
func (c *reserveCache) hit(args [][]byte) bool {
	if c.n == 0 || c.n != len(args) {
		return false
	}
	raw := c.raw[:]
	for i, a := range args {
		if len(a) != int(c.lens[i]) {
			return false
		}
		if len(a) <= 8 {
			if argWord(a) != c.words[i] {
				return false
			}
			continue
		}
		if string(a) != string(raw[:len(a)]) {
			return false
		}
		raw = raw[len(a):]
	}
	return true
}

// keep remembers r as the request of RL.RESERVE's arguments args, which
// parsed into it with id, if their bytes fit. An id named elsewhere than
// by a last ID option is not kept: it would come back for every id.
func (c *reserveCache) keep(args [][]byte, r shard.ReserveRequest, id []byte) {
	c.n = 0
	rest, last := reserveCached(args)
	if (id != nil && last == nil) || len(rest) > len(c.lens) {
		return
	}
	off := 0
	for i, a := range rest {
		c.lens[i], c.words[i] = uint8(len(a)), 0
		switch {
		case len(a) <= 8:
			c.words[i] = argWord(a)
		case off+len(a) > len(c.raw):
			return
		default:
			off += copy(c.raw[off:], a)
		}
	}
	r.ID = 0
	c.n, c.req = len(rest), r
}
