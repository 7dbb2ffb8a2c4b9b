package region

import "unsafe"

// A region made of a cluster is one decider per key: each node keeps a
// Store with the region's index (and its own Config.Member), holding the
// global keys of the slots it owns. One gateway per region carries the
// batches between regions: a node's batches go to its gateway, over the
// gateway's one link per other region, to that region's gateway, which
// fans each batch out with Split (every node gets the header, and the
// entries of the keys whose slots it owns) and answers with Merge (an
// entry is acknowledged only if its owner counted it). docs/regions.md,
// "A region made of a cluster".

// Part is one node's share of a batch that Split fanned out.
type Part struct {
	Batch *Batch
	// Index maps the part's entries to the batch's: Batch.Entries[i] is
	// the original's Entries[Index[i]]. Merge maps refusals back by it.
	Index []int
}

// Split fans b out among nodes 0 … n−1 of the receiving region by owner
// (the node that owns a key's slot in membership view view): every node
// gets a part with b's header (its sender, epoch, Final and echo
// addressees, so that every node learns of a member's new epoch), the
// entries and echo entries of its keys, and View set to view. An owner
// outside 0 … n−1 counts as node 0's.
func Split(b *Batch, n int, owner func(key string) int, view uint64) []Part {
	parts := make([]Part, n)
	for i := range parts {
		c := *b
		c.Entries, c.Echo, c.View = nil, nil, view
		if len(b.EchoFor) > 0 {
			c.Echo = []Entry{} // an echo, though maybe of nothing this node holds
		}
		parts[i].Batch = &c
	}
	at := func(key string) *Part {
		o := owner(key)
		if o < 0 || o >= n {
			o = 0
		}
		return &parts[o]
	}
	for i, e := range b.Entries {
		p := at(e.Key)
		p.Batch.Entries = append(p.Batch.Entries, e)
		p.Index = append(p.Index, i)
	}
	for _, e := range b.Echo {
		p := at(e.Key)
		p.Batch.Echo = append(p.Batch.Echo, e)
	}
	return parts
}

// Merge makes b's one acknowledgement from its parts' (acks[i] answers
// parts[i]; nil where a node did not take its part, as a store ignores a
// batch of an earlier start of its sender): an entry is refused unless
// the node that owns it counted it. It returns nil if no node took its
// part, or if b carries an echo that some node did not take (its ack is
// nil or Missed): an acknowledgement would tell the sender that its echo
// arrived, and a node that gained slots would wait for another in vain.
func Merge(b *Batch, parts []Part, acks []*Ack) *Ack {
	var out *Ack
	for _, a := range acks {
		switch {
		case len(b.EchoFor) > 0 && (a == nil || a.Missed):
			return nil
		case a != nil && out == nil:
			c := *a
			c.Refused = nil
			out = &c
		}
	}
	if out == nil {
		return nil
	}
	refused := make([]bool, len(b.Entries))
	for i, p := range parts {
		a := acks[i]
		if a == nil {
			for _, j := range p.Index {
				refused[j] = true
			}
			continue
		}
		for _, j := range a.Refused {
			if j >= 0 && j < len(p.Index) {
				refused[p.Index[j]] = true
			}
		}
	}
	for j, r := range refused {
		if r {
			out.Refused = append(out.Refused, j)
		}
	}
	return out
}

// partBytes is about what a part holds besides its entries: its Batch (a
// copy of the header) and the Part.
const partBytes = int64(unsafe.Sizeof(Batch{}) + unsafe.Sizeof(Part{}))

// PartsBytes returns about what a fan-out's parts hold while they are in
// flight, for --maxmemory: their copies of the batch's entries and echo,
// the maps back to the batch's entries, and their headers.
func PartsBytes(parts []Part) int64 {
	n := int64(0)
	for _, p := range parts {
		n += partBytes + linkEntryBytes*int64(cap(p.Batch.Entries)+cap(p.Batch.Echo)) + int64(cap(p.Index))*int64(unsafe.Sizeof(0))
	}
	return n
}

// RefusedBytes returns what an acknowledgement's refused indexes hold.
func RefusedBytes(a *Ack) int64 {
	if a == nil {
		return 0
	}
	return int64(cap(a.Refused)) * int64(unsafe.Sizeof(0))
}
