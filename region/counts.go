package region

// bucket is one time bucket's admitted units: a second (or a coarser
// counter) of a sliding window, or a whole fixed window.
type bucket struct{ id, n int64 }

// counts is a key's buckets from one source, ascending by id, each with at
// least one unit. A key holds a few dozen at most, so a slice scanned from
// the end beats a map.
type counts []bucket

// sum returns the units in buckets lo…hi.
func (c counts) sum(lo, hi int64) int64 {
	var s int64
	for i := len(c) - 1; i >= 0 && c[i].id >= lo; i-- {
		if c[i].id <= hi {
			s += c[i].n
		}
	}
	return s
}

// get returns the units in bucket id.
func (c counts) get(id int64) int64 { return c.sum(id, id) }

// find returns the index of bucket id, or where it would go.
func (c counts) find(id int64) (int, bool) {
	i := len(c)
	for i > 0 && c[i-1].id >= id {
		i--
	}
	return i, i < len(c) && c[i].id == id
}

// add adds n units to bucket id.
func (c *counts) add(id, n int64) {
	i, ok := c.find(id)
	if ok {
		(*c)[i].n += n
		return
	}
	*c = append(*c, bucket{})
	copy((*c)[i+1:], (*c)[i:])
	(*c)[i] = bucket{id, n}
}

// raise sets bucket id to n if that is more than it holds: counts only
// grow, so a late or repeated message never lowers what is known.
func (c *counts) raise(id, n int64) bool {
	if n <= 0 {
		return false
	}
	i, ok := c.find(id)
	if ok {
		if (*c)[i].n >= n {
			return false
		}
		(*c)[i].n = n
		return true
	}
	*c = append(*c, bucket{})
	copy((*c)[i+1:], (*c)[i:])
	(*c)[i] = bucket{id, n}
	return true
}

// prune drops buckets before lo.
func (c *counts) prune(lo int64) {
	i := 0
	for i < len(*c) && (*c)[i].id < lo {
		i++
	}
	if i > 0 {
		*c = (*c)[:copy(*c, (*c)[i:])]
	}
}

// last returns the newest bucket's id, or lo if there is none.
func (c counts) last(lo int64) int64 {
	if len(c) == 0 {
		return lo
	}
	return max(lo, c[len(c)-1].id)
}

// from returns the index of the first bucket at or after lo.
func (c counts) from(lo int64) int {
	i := len(c)
	for i > 0 && c[i-1].id >= lo {
		i--
	}
	return i
}
