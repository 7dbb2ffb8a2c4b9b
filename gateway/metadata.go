package gateway

import (
	pbstruct "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// dynamicMetadata is envoyproxy/ratelimit's response dynamic metadata
// (RESPONSE_DYNAMIC_METADATA): the request's domain, descriptors and
// hits_addend, and under "metadata" the `metadata` of the limits of the
// descriptors that passed, merged in request order. Built fresh for each
// call: the reference merges into the configuration's own values, so one
// call's merge leaks into the next; rlstore's configuration stays as loaded.
func dynamicMetadata(req *pb.RateLimitRequest, checks []check, resp *pb.RateLimitResponse) *structpb.Struct {
	descs := make([]*structpb.Value, 0, len(req.GetDescriptors()))
	for _, d := range req.GetDescriptors() {
		descs = append(descs, structpb.NewStructValue(descriptorStruct(d)))
	}
	fields := map[string]*structpb.Value{
		"domain":      structpb.NewStringValue(req.GetDomain()),
		"descriptors": structpb.NewListValue(&structpb.ListValue{Values: descs}),
	}
	if h := req.GetHitsAddend(); h != 0 {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(h))
	}
	passed := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := range checks {
		c := &checks[i]
		if c.unlimited || c.limit == nil || c.limit.Metadata == nil || resp.Statuses[i].Code == pb.RateLimitResponse_OVER_LIMIT {
			continue
		}
		// The configuration was checked at load: every value converts.
		if m, err := structpb.NewStruct(c.limit.Metadata); err == nil {
			mergeMetadata(passed, m)
		}
	}
	if len(passed.Fields) > 0 {
		fields["metadata"] = structpb.NewStructValue(passed)
	}
	return &structpb.Struct{Fields: fields}
}

// descriptorStruct is one descriptor in the dynamic metadata, as the
// reference writes it: entries as "key=value", the override as protobuf's
// text, and its own hits_addend when set.
func descriptorStruct(d *pbstruct.RateLimitDescriptor) *structpb.Struct {
	entries := make([]*structpb.Value, 0, len(d.GetEntries()))
	for _, e := range d.GetEntries() {
		entries = append(entries, structpb.NewStringValue(e.GetKey()+"="+e.GetValue()))
	}
	fields := map[string]*structpb.Value{"entries": structpb.NewListValue(&structpb.ListValue{Values: entries})}
	if l := d.GetLimit(); l != nil {
		fields["limit"] = structpb.NewStringValue(l.String())
	}
	if h := d.GetHitsAddend(); h != nil {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(h.GetValue()))
	}
	return &structpb.Struct{Fields: fields}
}

// mergeMetadata merges src into dest: a key dest lacks is added, two
// structs under one key merge, and otherwise the first value stays.
func mergeMetadata(dest, src *structpb.Struct) {
	for k, v := range src.GetFields() {
		d, ok := dest.Fields[k]
		if !ok {
			dest.Fields[k] = v
			continue
		}
		if ds, ss := d.GetStructValue(), v.GetStructValue(); ds != nil && ss != nil {
			mergeMetadata(ds, ss)
		}
	}
}
