package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Known is the cluster's known member set: every member ever agreed on,
// whether it is reachable now or not. A majority of it is the quorum a
// node needs to serve (see Lease), so it must not shrink when members
// die: a minority that forgot the members it cannot reach would count
// itself a majority. It shrinks only when a member leaves gracefully, or
// when an operator forgets a dead member for good (RL.CLUSTER FORGET, as
// Redis's CLUSTER FORGET).
//
// Nodes exchange their sets and merge them: each member's entry carries
// a version, and the higher version wins, a removal winning a tie, so
// that every node converges on the same set whatever order the merges
// come in (a last-writer-wins register per name, with Lamport versions).
// A removed member stays as a tombstone, so that an older copy of the set
// cannot bring it back; it returns only by being seen alive again.
//
// The zero value is not usable: make one with NewKnown. Its methods are
// safe for concurrent use.
type Known struct {
	mu       sync.Mutex             // guards the fields below
	m        map[string]KnownMember // by name, tombstones included
	onChange func([]KnownMember)
}

// KnownMember is one entry of the known member set.
type KnownMember struct {
	Name    string
	Gossip  string // host:port of its gossip, as last seen: where to look for it again
	Version uint64 // raised by every change of the entry, by whichever node makes it
	Gone    bool   // a tombstone: it left, or was forgotten
}

// NewKnown returns a set holding saved (as AppendKnown wrote it, say;
// nil for none).
func NewKnown(saved []KnownMember) *Known {
	k := &Known{m: map[string]KnownMember{}}
	for _, e := range saved {
		k.m[e.Name] = e
	}
	return k
}

// OnChange makes f be called, with All's result, after every change of
// the set (to save it, say). f runs on the goroutine that made the change,
// with no lock held; changes are reported in order. Set it before use.
func (k *Known) OnChange(f func(all []KnownMember)) {
	k.mu.Lock()
	k.onChange = f
	k.mu.Unlock()
}

// Add records name, seen alive at gossip address gossip, and reports
// whether the set changed (a new member, one back from a tombstone, or a
// new address).
func (k *Known) Add(name, gossip string) bool {
	k.mu.Lock()
	e, ok := k.m[name]
	if ok && !e.Gone && (e.Gossip == gossip || gossip == "") {
		k.mu.Unlock()
		return false
	}
	k.m[name] = KnownMember{Name: name, Gossip: gossip, Version: e.Version + 1}
	return k.changedUnlock()
}

// Remove makes name a tombstone: it left gracefully or was forgotten. It
// reports whether the set changed.
func (k *Known) Remove(name string) bool {
	k.mu.Lock()
	e, ok := k.m[name]
	if !ok || e.Gone {
		k.mu.Unlock()
		return false
	}
	e.Version++
	e.Gone = true
	k.m[name] = e
	return k.changedUnlock()
}

// Merge takes in another node's set, entry by entry: the higher version
// wins, and a removal wins a tie. It reports whether the set changed.
func (k *Known) Merge(in []KnownMember) bool {
	k.mu.Lock()
	changed := false
	for _, e := range in {
		if old, ok := k.m[e.Name]; !ok || newer(e, old) {
			k.m[e.Name] = e
			changed = true
		}
	}
	if !changed {
		k.mu.Unlock()
		return false
	}
	return k.changedUnlock()
}

// newer reports whether entry a supersedes b: a higher version, or at the
// same version a removal over a presence, then the greater address, so
// that two nodes that changed one entry at once still agree.
func newer(a, b KnownMember) bool {
	switch {
	case a.Version != b.Version:
		return a.Version > b.Version
	case a.Gone != b.Gone:
		return a.Gone
	}
	return a.Gossip > b.Gossip
}

// changedUnlock unlocks k and tells OnChange; it reports true.
func (k *Known) changedUnlock() bool {
	f, all := k.onChange, k.allLocked()
	k.mu.Unlock()
	if f != nil {
		f(all)
	}
	return true
}

// Members returns the members, tombstones left out, sorted by name.
func (k *Known) Members() []KnownMember {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []KnownMember
	for _, e := range k.m {
		if !e.Gone {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b KnownMember) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// All returns every entry, tombstones included, sorted by name: what
// another node merges, and what a node saves.
func (k *Known) All() []KnownMember {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.allLocked()
}

func (k *Known) allLocked() []KnownMember {
	out := make([]KnownMember, 0, len(k.m))
	for _, e := range k.m {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b KnownMember) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Has reports whether name is a member (not a tombstone).
func (k *Known) Has(name string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.m[name]
	return ok && !e.Gone
}

// Len is the number of members, tombstones left out.
func (k *Known) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, e := range k.m {
		if !e.Gone {
			n++
		}
	}
	return n
}

// Quorum is how many members, of n known, make a majority.
func Quorum(n int) int { return n/2 + 1 }

// knownHeader starts the encoding; its number is the format's version.
const knownHeader = "rlstore-known 1\n"

// ErrKnownFormat is ParseKnown's error for bytes it cannot read.
var ErrKnownFormat = errors.New("cluster: not a known member set")

// AppendKnown appends the encoding of ms to dst: a header line, then a
// line "name gossip version present|gone" per entry. Names and addresses
// have no spaces (Config checks names; addresses are host:port).
func AppendKnown(dst []byte, ms []KnownMember) []byte {
	dst = append(dst, knownHeader...)
	for _, e := range ms {
		state := "present"
		if e.Gone {
			state = "gone"
		}
		gossip := e.Gossip
		if gossip == "" {
			gossip = "-"
		}
		dst = append(dst, e.Name...)
		dst = append(dst, ' ')
		dst = append(dst, gossip...)
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, e.Version, 10)
		dst = append(dst, ' ')
		dst = append(dst, state...)
		dst = append(dst, '\n')
	}
	return dst
}

// ParseKnown reads what AppendKnown wrote.
func ParseKnown(b []byte) ([]KnownMember, error) {
	rest, ok := bytes.CutPrefix(b, []byte(knownHeader))
	if !ok {
		return nil, ErrKnownFormat
	}
	var out []KnownMember
	for line := range strings.SplitSeq(strings.TrimSuffix(string(rest), "\n"), "\n") {
		if line == "" {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 4 || (f[3] != "present" && f[3] != "gone") {
			return nil, fmt.Errorf("%w: line %q", ErrKnownFormat, line)
		}
		v, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%w: line %q", ErrKnownFormat, line)
		}
		gossip := f[1]
		if gossip == "-" {
			gossip = ""
		}
		out = append(out, KnownMember{Name: f[0], Gossip: gossip, Version: v, Gone: f[3] == "gone"})
	}
	return out, nil
}
