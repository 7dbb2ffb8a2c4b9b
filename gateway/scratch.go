package gateway

import (
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlstore/rlstore/gateway/batch"
)

// scratch is one call's working memory, kept in a pool between calls so
// that a call allocates only its response. Nothing in it outlives the
// call: the decider has written the keys into its pipeline when Decide
// returns.
type scratch struct {
	checks  []check
	reqs    []batch.Request
	out     []batch.Result
	keys    []byte // the requests' store keys, one after another
	keyEnds []int  // where each request's key ends in keys
	ans     answerStore
}

// Bounds of the scratch a pool keeps: a call with more descriptors or
// longer keys than a gateway's usual ones allocates its own, so that one
// huge call does not pin its memory.
const (
	scratchKeepDescriptors = 64
	scratchKeepKeyBytes    = 16 << 10
)

func (s *Service) getScratch() *scratch {
	if sc, ok := s.scratch.Get().(*scratch); ok {
		return sc
	}
	return &scratch{}
}

func (s *Service) putScratch(sc *scratch) {
	if cap(sc.checks) > scratchKeepDescriptors || cap(sc.keys) > scratchKeepKeyBytes {
		return
	}
	clear(sc.checks) // the limits and metrics of a configuration that may be replaced
	clear(sc.reqs)
	sc.ans.reset()
	sc.checks, sc.reqs, sc.out, sc.keys, sc.keyEnds = sc.checks[:0], sc.reqs[:0], sc.out[:0], sc.keys[:0], sc.keyEnds[:0]
	s.scratch.Put(sc)
}

// setKeys points each request at its key, once every key is built (keys
// may move while it grows).
func (sc *scratch) setKeys() {
	start := 0
	for i, end := range sc.keyEnds {
		sc.reqs[i].Key = sc.keys[start:end:end]
		start = end
	}
}

// statusBlock is one descriptor's answer with what it points to,
// allocated together.
type statusBlock struct {
	st  pb.RateLimitResponse_DescriptorStatus
	lim pb.RateLimitResponse_RateLimit
	dur durationpb.Duration
}

// oneResponse is the answer to a call of one descriptor, Envoy's most
// usual, in one allocation.
type oneResponse struct {
	resp  pb.RateLimitResponse
	ptrs  [1]*pb.RateLimitResponse_DescriptorStatus
	block [1]statusBlock
}

// newResponse returns a response for n descriptors, whose statuses the
// caller points at the blocks.
func newResponse(n int) (*pb.RateLimitResponse, []statusBlock) {
	if n == 1 {
		o := &oneResponse{}
		o.resp.Statuses = o.ptrs[:]
		return &o.resp, o.block[:]
	}
	resp := &pb.RateLimitResponse{Statuses: make([]*pb.RateLimitResponse_DescriptorStatus, n)}
	return resp, make([]statusBlock, n)
}

// answerStore holds the answer of a call whose caller writes it out
// before the call's scratch goes back to the pool
// (appendShouldRateLimit): it is reused, call after call.
type answerStore struct {
	resp   pb.RateLimitResponse
	ptrs   []*pb.RateLimitResponse_DescriptorStatus
	blocks []statusBlock
}

// response is newResponse in the store's memory.
func (a *answerStore) response(n int) (*pb.RateLimitResponse, []statusBlock) {
	if cap(a.blocks) < n {
		a.blocks, a.ptrs = make([]statusBlock, n), make([]*pb.RateLimitResponse_DescriptorStatus, n)
	}
	a.blocks, a.ptrs = a.blocks[:n], a.ptrs[:n]
	a.resp = pb.RateLimitResponse{Statuses: a.ptrs}
	return &a.resp, a.blocks
}

// reset drops what the last answer pointed to (a configuration's names).
func (a *answerStore) reset() {
	clear(a.blocks)
	clear(a.ptrs)
	a.resp = pb.RateLimitResponse{}
}
