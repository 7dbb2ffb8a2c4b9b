package gateway

import (
	"unicode/utf8"

	core "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The answer's fields, in the order protobuf writes them (by number).
const (
	fRespCode, fRespStatuses, fRespHeaders, fRespRequestHeaders = 1, 2, 3, 4
	fStatusCode, fStatusLimit, fStatusRemaining, fStatusReset   = 1, 2, 3, 4
	fLimitRequests, fLimitUnit, fLimitName                      = 1, 2, 3
	fDurationSeconds, fDurationNanos                            = 1, 2
	fHeaderKey, fHeaderValue                                    = 1, 2
)

// plainResponse reports whether r holds only what appendResponse writes:
// no raw body, dynamic metadata, quota, unit multiplier, raw header value,
// unknown field or nil element, and strings that are UTF-8 (which
// protobuf refuses to write otherwise).
func plainResponse(r *pb.RateLimitResponse) bool {
	if len(r.RawBody) != 0 || r.DynamicMetadata != nil || r.Quota != nil || unknown(r) {
		return false
	}
	for _, st := range r.Statuses {
		if !plainStatus(st) {
			return false
		}
	}
	return plainHeaders(r.ResponseHeadersToAdd) && plainHeaders(r.RequestHeadersToAdd)
}

func unknown(m protoreflect.ProtoMessage) bool { return len(m.ProtoReflect().GetUnknown()) != 0 }

func plainStatus(st *pb.RateLimitResponse_DescriptorStatus) bool {
	if st == nil || st.Quota != nil || unknown(st) {
		return false
	}
	if l := st.CurrentLimit; l != nil && (l.UnitMultiplier != nil || !utf8.ValidString(l.Name) || unknown(l)) {
		return false
	}
	return st.DurationUntilReset == nil || !unknown(st.DurationUntilReset)
}

func plainHeaders(hs []*core.HeaderValue) bool {
	for _, h := range hs {
		if h == nil || len(h.RawValue) != 0 || !utf8.ValidString(h.Key) || !utf8.ValidString(h.Value) || unknown(h) {
			return false
		}
	}
	return true
}

func sizeResponse(r *pb.RateLimitResponse) int {
	n := sizeInt(fRespCode, int64(r.OverallCode))
	for _, st := range r.Statuses {
		n += sizeMessage(fRespStatuses, sizeStatus(st))
	}
	return n + sizeHeaders(fRespHeaders, r.ResponseHeadersToAdd) + sizeHeaders(fRespRequestHeaders, r.RequestHeadersToAdd)
}

func appendResponse(b []byte, r *pb.RateLimitResponse) []byte {
	b = appendInt(b, fRespCode, int64(r.OverallCode))
	for _, st := range r.Statuses {
		b = appendMessage(b, fRespStatuses, sizeStatus(st))
		b = appendStatus(b, st)
	}
	b = appendHeaders(b, fRespHeaders, r.ResponseHeadersToAdd)
	return appendHeaders(b, fRespRequestHeaders, r.RequestHeadersToAdd)
}

func sizeStatus(st *pb.RateLimitResponse_DescriptorStatus) int {
	n := sizeInt(fStatusCode, int64(st.Code)) + sizeInt(fStatusRemaining, int64(st.LimitRemaining))
	if l := st.CurrentLimit; l != nil {
		n += sizeMessage(fStatusLimit, sizeLimit(l))
	}
	if d := st.DurationUntilReset; d != nil {
		n += sizeMessage(fStatusReset, sizeDuration(d))
	}
	return n
}

func appendStatus(b []byte, st *pb.RateLimitResponse_DescriptorStatus) []byte {
	b = appendInt(b, fStatusCode, int64(st.Code))
	if l := st.CurrentLimit; l != nil {
		b = appendMessage(b, fStatusLimit, sizeLimit(l))
		b = appendInt(b, fLimitRequests, int64(l.RequestsPerUnit))
		b = appendInt(b, fLimitUnit, int64(l.Unit))
		b = appendString(b, fLimitName, l.Name)
	}
	b = appendInt(b, fStatusRemaining, int64(st.LimitRemaining))
	if d := st.DurationUntilReset; d != nil {
		b = appendMessage(b, fStatusReset, sizeDuration(d))
		b = appendInt(b, fDurationSeconds, d.Seconds)
		b = appendInt(b, fDurationNanos, int64(d.Nanos))
	}
	return b
}

func sizeLimit(l *pb.RateLimitResponse_RateLimit) int {
	return sizeInt(fLimitRequests, int64(l.RequestsPerUnit)) + sizeInt(fLimitUnit, int64(l.Unit)) + sizeString(fLimitName, l.Name)
}

func sizeDuration(d *durationpb.Duration) int {
	return sizeInt(fDurationSeconds, d.Seconds) + sizeInt(fDurationNanos, int64(d.Nanos))
}

func sizeHeaders(num protowire.Number, hs []*core.HeaderValue) int {
	n := 0
	for _, h := range hs {
		n += sizeMessage(num, sizeString(fHeaderKey, h.Key)+sizeString(fHeaderValue, h.Value))
	}
	return n
}

func appendHeaders(b []byte, num protowire.Number, hs []*core.HeaderValue) []byte {
	for _, h := range hs {
		b = appendMessage(b, num, sizeString(fHeaderKey, h.Key)+sizeString(fHeaderValue, h.Value))
		b = appendString(b, fHeaderKey, h.Key)
		b = appendString(b, fHeaderValue, h.Value)
	}
	return b
}

// sizeInt is a varint field of v, which protobuf leaves out when 0. An
// int32 or enum is widened with its sign, as protobuf writes it.
func sizeInt(num protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(uint64(v))
}

func appendInt(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

func sizeString(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func sizeMessage(num protowire.Number, n int) int {
	return protowire.SizeTag(num) + protowire.SizeBytes(n)
}

// appendMessage starts an embedded message of n bytes.
func appendMessage(b []byte, num protowire.Number, n int) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendVarint(b, uint64(n))
}
