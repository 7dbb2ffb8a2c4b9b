package region

import (
	"math"
	"time"

	"github.com/rlstore/rlstore/window"
)

// fill sets d's Remaining, Wait and Reset. held is what the decision
// counted: the region's own units plus, per other region, its units or
// its reserve, whichever is more.
func (s *Store) fill(d *Decision, k *key, lim Limit, now, cur, lo, held, cost int64) {
	used := held
	if d.Allowed {
		used += cost
	}
	d.Remaining = max(0, lim.Limit-used)
	all := s.merged(k, lo)
	if len(all) > 0 || d.Allowed {
		d.Reset = time.Duration(lim.goneAt(all.last(cur)) - now)
	}
	switch {
	case d.Allowed:
	case cost > lim.Limit:
		d.Wait = window.Never
	case d.Mode == DeniedEscrow:
		d.Wait = s.cfg.Sync // acknowledgements come with the next exchanges
	case lim.Kind == window.KindFixed:
		d.Wait = time.Duration(lim.goneAt(cur) - now)
	default:
		d.Wait = d.Reset
		for _, b := range all {
			held -= b.n
			if held+cost <= lim.Limit {
				d.Wait = time.Duration(lim.goneAt(b.id) - now)
				break
			}
		}
	}
}

// merged returns k's buckets from lo on summed over every region, in a
// buffer reused by the next call.
func (s *Store) merged(k *key, lo int64) counts {
	all := s.scratch[:0]
	for i := range k.own {
		if k.own[i].id >= lo {
			all = append(all, k.own[i])
		}
	}
	for p := range k.seen {
		for _, b := range k.seen[p] {
			if b.id >= lo && b.id < math.MaxInt64 {
				all.add(b.id, b.n)
			}
		}
	}
	s.scratch = all
	return all
}
