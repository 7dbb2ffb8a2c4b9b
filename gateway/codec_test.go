package gateway

import (
	"encoding/binary"
	"syscall"
	"testing"
	"time"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// gen reads fuzz bytes as the choices that build a message; past the end
// every choice is 0.
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

func (g *gen) u64() uint64 {
	var v [8]byte
	n := copy(v[:], g.b)
	g.b = g.b[n:]
	return binary.LittleEndian.Uint64(v[:]) >> (g.byte() % 64)
}

// str is a short string: empty, ASCII, multi-byte UTF-8, or (rarely) not UTF-8.
func (g *gen) str() string {
	words := []string{"", "user", "remote_address", "10.0.0.1", "*", "é", "日本", "\xff\xfe", "a b", "RateLimit-Limit"}
	s := ""
	for n := g.byte() % 3; n > 0; n-- {
		s += words[int(g.byte())%len(words)]
	}
	return s
}

func (g *gen) request() *pb.RateLimitRequest {
	r := &pb.RateLimitRequest{Domain: g.str(), HitsAddend: uint32(g.u64())}
	for n := g.byte() % 5; n > 0; n-- {
		d := &rlpb.RateLimitDescriptor{IsNegativeHits: g.byte()%4 == 0}
		for m := g.byte() % 4; m > 0; m-- {
			d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: g.str(), Value: g.str()})
		}
		if g.byte()%3 == 0 {
			d.HitsAddend = wrapperspb.UInt64(g.u64())
		}
		if g.byte()%8 == 0 {
			d.Limit = &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: uint32(g.u64()), Unit: typev3.RateLimitUnit(g.byte() % 8)}
		}
		r.Descriptors = append(r.Descriptors, d)
	}
	return r
}

func (g *gen) response() *pb.RateLimitResponse {
	r := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_Code(g.byte() % 4)}
	for n := g.byte() % 5; n > 0; n-- {
		st := &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_Code(int8(g.byte())), LimitRemaining: uint32(g.u64())}
		if g.byte()%4 != 0 {
			st.CurrentLimit = &pb.RateLimitResponse_RateLimit{Name: g.str(), RequestsPerUnit: uint32(g.u64()), Unit: pb.RateLimitResponse_RateLimit_Unit(g.byte() % 8)}
			if g.byte()%16 == 0 {
				st.CurrentLimit.UnitMultiplier = wrapperspb.UInt32(uint32(g.u64()))
			}
		}
		if g.byte()%4 != 0 {
			st.DurationUntilReset = &durationpb.Duration{Seconds: int64(g.u64()), Nanos: int32(g.u64())}
		}
		r.Statuses = append(r.Statuses, st)
	}
	for n := g.byte() % 4; n > 0; n-- {
		h := &core.HeaderValue{Key: g.str(), Value: g.str()}
		if g.byte()%16 == 0 {
			h.RawValue = []byte(g.str())
		}
		if g.byte()%2 == 0 {
			r.ResponseHeadersToAdd = append(r.ResponseHeadersToAdd, h)
		} else {
			r.RequestHeadersToAdd = append(r.RequestHeadersToAdd, h)
		}
	}
	if g.byte()%16 == 0 {
		r.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{"k": structpb.NewStringValue(g.str())}}
	}
	return r
}

// checkDecode compares decodeRequest with protobuf on the same bytes: where
// it reads them it must read what protobuf reads, and it must not read
// what protobuf refuses.
func checkDecode(t *testing.T, b []byte) bool {
	var got pb.RateLimitRequest
	if !decodeRequest(b, &got) {
		return false
	}
	var want pb.RateLimitRequest
	require.NoError(t, proto.Unmarshal(b, &want), "decodeRequest read what protobuf refuses: %x", b)
	require.True(t, proto.Equal(&want, &got), "decodeRequest(%x) = %v, protobuf read %v", b, &got, &want)
	return true
}

// FuzzCodecRequest reads the fuzz bytes two ways: as a request on the wire
// (any bytes at all), and as the choices of a random request that protobuf
// writes, with an unknown field or a second hits_addend sometimes added.
func FuzzCodecRequest(f *testing.F) {
	for _, r := range []*pb.RateLimitRequest{
		{Domain: "load", Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "42")}},
		{Domain: "d", HitsAddend: 3, Descriptors: []*rlpb.RateLimitDescriptor{{HitsAddend: wrapperspb.UInt64(0)}, desc("a", "b", "c", "é")}},
	} {
		b, err := proto.Marshal(r)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte{1, 2, 3, 200, 7, 9, 1, 1, 4, 4, 4, 4, 4, 4, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		g := &gen{b: data}
		r := g.request()
		b, err := proto.Marshal(r)
		if err != nil {
			return // not UTF-8: protobuf will not write it
		}
		switch g.byte() % 8 {
		case 0:
			b = protowire.AppendVarint(protowire.AppendTag(b, 9, protowire.VarintType), 1)
		case 1:
			b = protowire.AppendBytes(protowire.AppendTag(b, 2, protowire.BytesType), []byte{0x1a, 0x02, 0x08, 0x05, 0x1a, 0x00})
		}
		plain := true
		for _, d := range r.GetDescriptors() {
			plain = plain && d.Limit == nil
		}
		if read := checkDecode(t, b); plain && len(b) == proto.Size(r) {
			assert.True(t, read, "decodeRequest left %v to protobuf", r)
		}
	})
}

func desc(kv ...string) *rlpb.RateLimitDescriptor {
	d := &rlpb.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// FuzzCodecResponse builds a random answer and writes it with the codec and
// with protobuf: the bytes must be the same.
func FuzzCodecResponse(f *testing.F) {
	f.Add([]byte{1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 3})
	f.Add([]byte{2, 3, 200, 9, 9, 9, 9, 0, 0, 0, 1, 2, 5, 1, 1, 2, 3, 4, 5, 6, 7, 8, 0, 1})
	c := newCodec()
	f.Fuzz(func(t *testing.T, data []byte) {
		r := (&gen{b: data}).response()
		want, werr := proto.Marshal(r)
		got, gerr := c.Marshal(r)
		if werr != nil {
			require.Error(t, gerr, "the codec wrote %v, which protobuf refuses", r)
			return
		}
		require.NoError(t, gerr)
		assert.Equal(t, string(want), string(got.Materialize()), "codec.Marshal(%v)", r) // an empty answer: nil or empty
		if plainResponse(r) {
			assert.Equal(t, len(want), sizeResponse(r))
		}
		got.Free()
	})
}

// TestCodecForms checks which forms the codec writes and reads itself, and
// that the others come out of protobuf the same.
func TestCodecForms(t *testing.T) {
	c := newCodec()
	plain := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OVER_LIMIT, Statuses: []*pb.RateLimitResponse_DescriptorStatus{{
		Code: pb.RateLimitResponse_OVER_LIMIT, CurrentLimit: &pb.RateLimitResponse_RateLimit{Name: "n", RequestsPerUnit: 5, Unit: pb.RateLimitResponse_RateLimit_MINUTE},
		DurationUntilReset: durationpb.New(7e9),
	}}, ResponseHeadersToAdd: []*core.HeaderValue{{Key: "RateLimit-Limit", Value: "5"}}}
	assert.True(t, plainResponse(plain))
	meta := proto.Clone(plain).(*pb.RateLimitResponse)
	meta.DynamicMetadata = &structpb.Struct{Fields: map[string]*structpb.Value{"domain": structpb.NewStringValue("d")}}
	assert.False(t, plainResponse(meta))
	for _, r := range []*pb.RateLimitResponse{plain, meta} {
		got, err := c.Marshal(r)
		require.NoError(t, err)
		back := &pb.RateLimitResponse{}
		require.NoError(t, proto.Unmarshal(got.Materialize(), back))
		assert.True(t, proto.Equal(r, back), "codec.Marshal(%v) read back as %v", r, back)
		got.Free()
	}
	override := &pb.RateLimitRequest{Domain: "d", Descriptors: []*rlpb.RateLimitDescriptor{{
		Entries: desc("k", "v").Entries, Limit: &rlpb.RateLimitDescriptor_RateLimitOverride{RequestsPerUnit: 3, Unit: typev3.RateLimitUnit_HOUR},
	}}}
	b, err := proto.Marshal(override)
	require.NoError(t, err)
	assert.False(t, decodeRequest(b, &pb.RateLimitRequest{}), "the override is left to protobuf")
	got := &pb.RateLimitRequest{}
	require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, got))
	assert.True(t, proto.Equal(override, got), "codec.Unmarshal = %v", got)
}

// reportCPU reports the process's CPU time per op when the returned
// function runs: on a shared host, wall time per op says more about the
// other tenants than about the code.
func reportCPU(b *testing.B) func() {
	start := cpuTime()
	b.ResetTimer()
	return func() { b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCodec reads a one-descriptor request and writes its answer, as a
// call does, with protobuf's codec and with the gateway's.
func BenchmarkCodec(b *testing.B) {
	req, err := proto.Marshal(&pb.RateLimitRequest{Domain: "load", Descriptors: []*rlpb.RateLimitDescriptor{desc("user", "12345")}})
	require.NoError(b, err)
	resp := &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: []*pb.RateLimitResponse_DescriptorStatus{{
		Code: pb.RateLimitResponse_OK, CurrentLimit: &pb.RateLimitResponse_RateLimit{RequestsPerUnit: 1000000, Unit: pb.RateLimitResponse_RateLimit_MINUTE},
		LimitRemaining: 999000, DurationUntilReset: durationpb.New(17e9),
	}}}
	for _, c := range []struct {
		name  string
		codec interface {
			Marshal(any) (mem.BufferSlice, error)
			Unmarshal(mem.BufferSlice, any) error
		}
	}{{"proto", newCodec().proto}, {"gateway", newCodec()}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b)()
			b.RunParallel(func(p *testing.PB) {
				for p.Next() {
					var r pb.RateLimitRequest
					if err := c.codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer(req)}, &r); err != nil {
						b.Fatal(err)
					}
					out, err := c.codec.Marshal(resp)
					if err != nil {
						b.Fatal(err)
					}
					out.Free()
				}
			})
		})
	}
}
