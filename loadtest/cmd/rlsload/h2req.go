package main

import (
	"errors"
	"math/rand/v2"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// reqTable holds every descriptor the h2 client sends, encoded once as
// protobuf (RateLimitRequest's field 2), so that a call's request is the
// domain's bytes and a few copies.
type reqTable struct {
	domain []byte   // field 1
	descs  []byte   // the descriptors, one after another
	ends   []uint32 // where each ends in descs
	n      int      // descriptors a call
	max    int      // the longest message append makes
}

func newReqTable(cfg config) *reqTable {
	t := &reqTable{n: cfg.descriptors, ends: make([]uint32, 0, cfg.keys)}
	t.domain = protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), cfg.domain)
	var entry, desc []byte
	for v := range cfg.keys {
		entry = protowire.AppendString(protowire.AppendTag(entry[:0], 1, protowire.BytesType), cfg.key)
		entry = protowire.AppendString(protowire.AppendTag(entry, 2, protowire.BytesType), strconv.Itoa(v))
		desc = protowire.AppendBytes(protowire.AppendTag(desc[:0], 1, protowire.BytesType), entry)
		t.descs = protowire.AppendBytes(protowire.AppendTag(t.descs, 2, protowire.BytesType), desc)
		t.ends = append(t.ends, uint32(len(t.descs)))
	}
	t.max = t.longest()
	return t
}

// append appends a call's gRPC message (5-byte prefix and request) of
// random descriptors drawn by r.
func (t *reqTable) append(b []byte, r *rand.Rand) []byte {
	at := len(b)
	b = append(b, 0, 0, 0, 0, 0)
	b = append(b, t.domain...)
	for range t.n {
		v := r.IntN(len(t.ends))
		start := uint32(0)
		if v > 0 {
			start = t.ends[v-1]
		}
		b = append(b, t.descs[start:t.ends[v]]...)
	}
	n := len(b) - at - 5
	b[at+1], b[at+2], b[at+3], b[at+4] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	return b
}

func (t *reqTable) longest() int {
	longest := uint32(0)
	for i, end := range t.ends {
		start := uint32(0)
		if i > 0 {
			start = t.ends[i-1]
		}
		longest = max(longest, end-start)
	}
	return 5 + len(t.domain) + t.n*int(longest)
}

// RateLimitResponse's codes.
const (
	codeOK        = 1
	codeOverLimit = 2
)

var errAnswer = errors.New("malformed answer")

// checkAnswer reads a ShouldRateLimit answer (a gRPC message: prefix and
// RateLimitResponse) and checks it: one uncompressed message, an overall
// code of OK or OVER_LIMIT, and a status of either code for each of the
// call's n descriptors. It returns the overall code.
func checkAnswer(b []byte, n int) (uint64, error) {
	if len(b) < 5 || b[0] != 0 || int(uint32(b[1])<<24|uint32(b[2])<<16|uint32(b[3])<<8|uint32(b[4])) != len(b)-5 {
		return 0, errAnswer
	}
	b = b[5:]
	var overall uint64
	statuses := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return 0, errAnswer
		}
		b = b[l:]
		switch {
		case num == 1 && typ == protowire.VarintType:
			overall, l = protowire.ConsumeVarint(b)
		case num == 2 && typ == protowire.BytesType:
			var st []byte
			st, l = protowire.ConsumeBytes(b)
			if l >= 0 && !okStatus(st) {
				return 0, errAnswer
			}
			statuses++
		default:
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return 0, errAnswer
		}
		b = b[l:]
	}
	if (overall != codeOK && overall != codeOverLimit) || statuses != n {
		return 0, errAnswer
	}
	return overall, nil
}

// okStatus reports whether a DescriptorStatus is well formed with a code of OK or OVER_LIMIT.
func okStatus(b []byte) bool {
	var code uint64
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			return false
		}
		b = b[l:]
		if num == 1 && typ == protowire.VarintType {
			code, l = protowire.ConsumeVarint(b)
		} else {
			l = protowire.ConsumeFieldValue(num, typ, b)
		}
		if l < 0 {
			return false
		}
		b = b[l:]
	}
	return code == codeOK || code == codeOverLimit
}
