package shard

import "github.com/rlstore/rlstore/window"

// refundLocked gives r.Units back to key, never beyond its full limit. With
// r.Params (RL.REFUND key rule params… COST n) the key must be of that rule's
// kind, and takes its parameters first, as a decision applies its own: the
// limit the refund stops at is the one the request names.
func (m *Map) refundLocked(s *shard, key []byte, h uint64, r *ReserveRequest, now int64) (ReserveResult, error) {
	if r.Params.Kind != window.KindNone {
		i, ok := s.findLocked(key, h)
		if !ok || s.expiredLocked(s.slots.at(i), now) {
			return ReserveResult{}, nil // full already
		}
		sl := s.slots.at(i)
		if s.params.get(sl.param()).Kind != r.Params.Kind {
			return ReserveResult{}, ErrWrongType
		}
		if s.setParamLocked(sl, r.Params) {
			s.markDirtyLocked(i)
		}
	}
	return ReserveResult{Done: m.adjustLocked(s, key, h, now, -r.Units)}, nil
}
