package gateway

import (
	"errors"
	"unicode/utf8"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	grpcproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// codec is the gRPC server's codec: ShouldRateLimit's request and answer in
// the forms Envoy sends and rlstore answers are read and written by hand,
// everything else (health, reflection, a request with a limit override or
// fields unknown here, an answer with dynamic metadata) by protobuf's own
// codec. The hand-written forms make exactly what protobuf makes (FuzzCodec
// compares them), with no reflection and, for a call's request, a handful
// of allocations instead of one per message and string.
type codec struct {
	proto encoding.CodecV2
}

func newCodec() codec { return codec{proto: encoding.GetCodecV2(grpcproto.Name)} }

// Name is protobuf's: the wire format is the same.
func (codec) Name() string { return grpcproto.Name }

// Unmarshal implements encoding.CodecV2.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	if req, ok := v.(*pb.RateLimitRequest); ok {
		if len(data) == 1 && decodeRequest(data[0].ReadOnlyData(), req) {
			return nil
		}
		buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
		ok := decodeRequest(buf.ReadOnlyData(), req)
		buf.Free()
		if ok {
			return nil
		}
	}
	return c.proto.Unmarshal(data, v)
}

// Marshal implements encoding.CodecV2. The answer goes out in a buffer of
// gRPC's pool, which the transport returns to it once written.
func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	resp, ok := v.(*pb.RateLimitResponse)
	if !ok || !plainResponse(resp) {
		return c.proto.Marshal(v)
	}
	pool := mem.DefaultBufferPool()
	n := sizeResponse(resp)
	// Above the pooling threshold, so that mem.NewBuffer gives it back.
	buf := pool.Get(max(n, minPooledBuffer))
	*buf = appendResponse((*buf)[:0], resp)
	if len(*buf) != n {
		pool.Put(buf)
		return nil, errCodecSize
	}
	return mem.BufferSlice{mem.NewBuffer(buf, pool)}, nil
}

// minPooledBuffer is the least capacity that mem.NewBuffer pools.
const minPooledBuffer = 1<<10 + 1

var errCodecSize = errors.New("gateway: codec: answer size mismatch")

// reqShape is a request's counts, read in a first pass so that the second
// allocates each kind of message once, as one slice.
type reqShape struct {
	descs, entries, hits int
}

// decodeRequest reads b into req, which it overwrites, and reports whether
// it could: a request with fields or forms it does not read (a limit
// override, an unknown field, a field twice where protobuf would merge, a
// string that is not UTF-8) is left to protobuf. The strings share one
// copy of b.
func decodeRequest(b []byte, req *pb.RateLimitRequest) bool {
	var shape reqShape
	if !walkRequest(b, nil, &shape, nil) {
		return false
	}
	d := newReqDecoder(shape, req)
	d.s, d.cap = string(b), cap(b)
	return walkRequest(b, &d, &reqShape{}, req)
}

// oneDescriptor is the messages of a request of one descriptor of at most
// two entries, Envoy's most usual, in one allocation.
type oneDescriptor struct {
	descPtr [1]*rlpb.RateLimitDescriptor
	desc    [1]rlpb.RateLimitDescriptor
	ptrs    [2]*rlpb.RateLimitDescriptor_Entry
	entries [2]rlpb.RateLimitDescriptor_Entry
}

// newReqDecoder allocates the messages of a request of the given shape and
// empties req.
func newReqDecoder(shape reqShape, req *pb.RateLimitRequest) reqDecoder {
	var d reqDecoder
	if shape.hits > 0 {
		d.hits = make([]wrapperspb.UInt64Value, shape.hits)
	}
	if shape.descs == 1 && shape.entries <= len(oneDescriptor{}.entries) {
		o := &oneDescriptor{}
		d.descs, d.entries, d.ptrs = o.desc[:], o.entries[:], o.ptrs[:]
		*req = pb.RateLimitRequest{Descriptors: o.descPtr[:0]}
		return d
	}
	d.descs = make([]rlpb.RateLimitDescriptor, shape.descs)
	d.entries = make([]rlpb.RateLimitDescriptor_Entry, shape.entries)
	d.ptrs = make([]*rlpb.RateLimitDescriptor_Entry, shape.entries)
	*req = pb.RateLimitRequest{Descriptors: make([]*rlpb.RateLimitDescriptor, 0, shape.descs)}
	return d
}

// reqDecoder holds the second pass's slabs; a nil one only counts.
type reqDecoder struct {
	s       string // b's copy, whose substrings become the request's strings
	cap     int    // b's capacity: a part of b starts at cap - its own capacity
	descs   []rlpb.RateLimitDescriptor
	entries []rlpb.RateLimitDescriptor_Entry
	ptrs    []*rlpb.RateLimitDescriptor_Entry
	hits    []wrapperspb.UInt64Value
}

// field reads one field's tag and value: v for a varint, sub for bytes.
func field(b []byte) (num protowire.Number, typ protowire.Type, v uint64, sub []byte, n int) {
	num, typ, n = protowire.ConsumeTag(b)
	if n < 0 {
		return 0, 0, 0, nil, n
	}
	var m int
	switch typ {
	case protowire.VarintType:
		v, m = protowire.ConsumeVarint(b[n:])
	case protowire.BytesType:
		sub, m = protowire.ConsumeBytes(b[n:])
	default:
		return 0, 0, 0, nil, -1
	}
	if m < 0 {
		return 0, 0, 0, nil, m
	}
	return num, typ, v, sub, n + m
}

// str is sub, a part of b, as a string: a substring of the decoder's copy
// of b, or nothing when only counting.
func (d *reqDecoder) str(sub []byte) string {
	if d == nil || len(sub) == 0 {
		return ""
	}
	off := d.cap - cap(sub)
	return d.s[off : off+len(sub)]
}

func walkRequest(b []byte, d *reqDecoder, shape *reqShape, req *pb.RateLimitRequest) bool {
	for len(b) > 0 {
		num, typ, v, sub, n := field(b)
		if n < 0 {
			return false
		}
		rest := b[n:]
		switch {
		case num == 1 && typ == protowire.BytesType && utf8.Valid(sub):
			if req != nil {
				req.Domain = d.str(sub)
			}
		case num == 2 && typ == protowire.BytesType:
			if !walkDescriptor(sub, d, shape, req) {
				return false
			}
		case num == 3 && typ == protowire.VarintType:
			if req != nil {
				req.HitsAddend = uint32(v)
			}
		default:
			return false
		}
		b = rest
	}
	return true
}

// walkDescriptor reads one descriptor.
func walkDescriptor(sub []byte, d *reqDecoder, shape *reqShape, req *pb.RateLimitRequest) bool {
	var desc *rlpb.RateLimitDescriptor
	if d != nil {
		desc = &d.descs[shape.descs]
		req.Descriptors = append(req.Descriptors, desc)
		desc.Entries = d.ptrs[shape.entries:shape.entries] // walkEntry extends it
	}
	shape.descs++
	b := sub
	for len(b) > 0 {
		num, typ, v, val, n := field(b)
		if n < 0 {
			return false
		}
		switch {
		case num == 1 && typ == protowire.BytesType:
			if !walkEntry(val, d, shape, desc) {
				return false
			}
		case num == 3 && typ == protowire.BytesType:
			if !walkHits(val, d, shape, desc) {
				return false
			}
		case num == 4 && typ == protowire.VarintType:
			if desc != nil {
				desc.IsNegativeHits = v != 0
			}
		default: // 2, the limit override: rare, left to protobuf
			return false
		}
		b = b[n:]
	}
	if desc != nil {
		desc.Entries = desc.Entries[:len(desc.Entries):len(desc.Entries)]
	}
	return true
}

func walkEntry(sub []byte, d *reqDecoder, shape *reqShape, desc *rlpb.RateLimitDescriptor) bool {
	var e *rlpb.RateLimitDescriptor_Entry
	if d != nil {
		e = &d.entries[shape.entries]
		d.ptrs[shape.entries] = e
		desc.Entries = desc.Entries[:len(desc.Entries)+1]
	}
	shape.entries++
	b := sub
	for len(b) > 0 {
		num, typ, _, val, n := field(b)
		if n < 0 || typ != protowire.BytesType || (num != 1 && num != 2) || !utf8.Valid(val) {
			return false
		}
		if e != nil {
			s := d.str(val)
			if num == 1 {
				e.Key = s
			} else {
				e.Value = s
			}
		}
		b = b[n:]
	}
	return true
}

// walkHits reads a descriptor's hits_addend; a second one in the same
// descriptor, which protobuf merges into the first, is left to it.
func walkHits(sub []byte, d *reqDecoder, shape *reqShape, desc *rlpb.RateLimitDescriptor) bool {
	var h *wrapperspb.UInt64Value
	if d != nil {
		if desc.HitsAddend != nil {
			return false
		}
		h = &d.hits[shape.hits]
		desc.HitsAddend = h
	}
	shape.hits++
	b := sub
	for len(b) > 0 {
		num, typ, v, _, n := field(b)
		if n < 0 || num != 1 || typ != protowire.VarintType {
			return false
		}
		if h != nil {
			h.Value = v
		}
		b = b[n:]
	}
	return true
}
