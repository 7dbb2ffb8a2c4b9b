package region

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// clusterRegions is eu as a cluster of n nodes (region 0, members m0 …)
// and us as one node (region 1), all started at t0.
func clusterRegions(t *testing.T, n int) (eu []*Store, us *Store) {
	for m := range n {
		cfg := Defaults(0, 2)
		cfg.Member, cfg.Epoch = "m"+string(rune('0'+m)), t0
		s, err := New(cfg)
		require.NoError(t, err)
		eu = append(eu, s)
	}
	cfg := Defaults(1, 2)
	cfg.Epoch = t0
	us, err := New(cfg)
	require.NoError(t, err)
	return eu, us
}

// exchangeCluster carries one round of batches: each eu node's to us, and
// us's to eu's gateway, which fans it out by owner and merges the acks.
func exchangeCluster(eu []*Store, us *Store, owner func(string) int, view uint64, now int64) {
	for _, s := range eu {
		if s == nil {
			continue // a node whose batches do not get through
		}
		if b := s.Sync(now)[1]; b != nil {
			s.Acked(us.Receive(b, now), now)
		}
	}
	b := us.Sync(now)[0]
	parts := Split(b, len(eu), owner, view)
	acks := make([]*Ack, len(parts))
	for i, p := range parts {
		if eu[i] != nil {
			acks[i] = eu[i].Receive(p.Batch, now)
		}
	}
	if a := Merge(b, parts, acks); a != nil {
		us.Acked(a, now)
	}
}

// TestClusterRegionUsesWholeLimit: eu is two nodes, us one; a key owned
// by eu's m0 is asked for in both regions. The region counts one reserve
// (R is 2 regions, not 3 deciders), so together they admit the whole
// limit. With each node a decider of its own (the form before), eu's
// other node held its reserve φ = 16 of L = 100 in every view, and the
// key stopped at about 84.
func TestClusterRegionUsesWholeLimit(t *testing.T) {
	eu, us := clusterRegions(t, 2)
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	owner := func(string) int { return 0 }
	now := t0 + int64(time.Millisecond)
	for range 3 { // the first contact: every region echoes every other's members
		exchangeCluster(eu, us, owner, 0, now)
	}
	admitted := int64(0)
	for range 200 {
		now += int64(5 * time.Millisecond)
		if eu[0].Decide([]byte("k"), lim, now, 1, false).Allowed {
			admitted++
		}
		if us.Decide([]byte("k"), lim, now, 1, false).Allowed {
			admitted++
		}
		exchangeCluster(eu, us, owner, 0, now)
	}
	assert.Equal(t, lim.Limit, admitted, "the whole limit, between the two regions")
	assert.False(t, eu[1].Has([]byte("k")) && eu[1].Stats(now).Admitted > 0, "eu's other node decides nothing of it")
}

// TestClusterGainWaitsForEcho: when the key's slot moves from m0 to m1,
// m1 takes a new epoch; it denies the key (recovering) until us, having
// seen the epoch, has sent its units again and echoed eu's, and then
// counts everything m0 admitted that us had received: the window holds
// the limit, no more, though m1's copy of m0's units is empty.
func TestClusterGainWaitsForEcho(t *testing.T) {
	eu, us := clusterRegions(t, 2)
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	own := 0
	owner := func(string) int { return own }
	now := t0 + int64(time.Millisecond)
	for range 3 {
		exchangeCluster(eu, us, owner, 0, now)
	}
	admitted := int64(0)
	for range 60 {
		now += int64(time.Millisecond)
		if eu[0].Decide([]byte("k"), lim, now, 1, false).Allowed {
			admitted++
		}
		if us.Decide([]byte("k"), lim, now, 1, false).Allowed {
			admitted++
		}
		exchangeCluster(eu, us, owner, 0, now)
	}
	own = 1 // the slot moves; m1 had no copy of it
	eu[1].Gain(now, 1, func(key string) bool { return key == "k" }, nil)
	d := eu[1].Decide([]byte("k"), lim, now, 1, false)
	assert.Equal(t, DeniedRecovering, d.Mode, "before us echoed")
	exchangeCluster(eu, us, owner, 1, now) // m1's new epoch reaches us
	exchangeCluster(eu, us, owner, 1, now) // us resends and echoes
	for range 200 {
		now += int64(time.Millisecond)
		if eu[1].Decide([]byte("k"), lim, now, 1, false).Allowed {
			admitted++
		}
		if us.Decide([]byte("k"), lim, now, 1, false).Allowed {
			admitted++
		}
		exchangeCluster(eu, us, owner, 1, now)
	}
	assert.Equal(t, lim.Limit, admitted, "the limit, across the move")
	assert.Equal(t, DeniedLimit, eu[1].Decide([]byte("k"), lim, now, 1, false).Mode)
}

// TestSplitMerge: the fan-out gives every node the header and its keys'
// entries, and the merged acknowledgement refuses what an owner refused
// or did not take; a batch with an echo that some node did not take is
// not acknowledged.
func TestSplitMerge(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 10, Window: time.Second}
	b := &Batch{From: 1, Seq: 9, Epoch: 5, EchoFor: []int64{3}, Entries: []Entry{
		{"a", lim, 1, 1}, {"b", lim, 1, 1}, {"c", lim, 1, 1}, {"d", lim, 1, 1},
	}, Echo: []Entry{{"b", lim, 1, 2}}}
	owner := func(k string) int { return map[string]int{"a": 0, "b": 1, "c": 2, "d": 9}[k] }
	parts := Split(b, 3, owner, 7)
	require.Len(t, parts, 3)
	assert.Equal(t, []int{0, 3}, parts[0].Index, "d's owner is unknown: node 0's")
	assert.Equal(t, []int{1}, parts[1].Index)
	assert.Equal(t, []Entry{{"b", lim, 1, 2}}, parts[1].Batch.Echo)
	assert.NotNil(t, parts[2].Batch.Echo, "an echo, though empty")
	for _, p := range parts {
		assert.Equal(t, uint64(7), p.Batch.View)
		assert.Equal(t, int64(5), p.Batch.Epoch)
		assert.Equal(t, uint64(9), p.Batch.Seq)
	}
	assert.Nil(t, Merge(b, parts, []*Ack{{Seq: 9}, {Seq: 9}, nil}), "node 2 did not take its echo: the sender must echo again")
	assert.Nil(t, Merge(b, parts, []*Ack{{Seq: 9}, {Seq: 9, Missed: true}, {Seq: 9}}), "node 1 took its echo under an older view")
	assert.NotNil(t, Merge(b, parts, []*Ack{{Seq: 9}, {Seq: 9}, {Seq: 9}}))
	b.EchoFor, b.Echo = nil, nil
	a := Merge(b, parts, []*Ack{{Seq: 9, Refused: []int{1}}, {Seq: 9}, nil})
	assert.Equal(t, []int{2, 3}, a.Refused, "d refused by node 0, c not taken by node 2")
	assert.Nil(t, Merge(b, parts, []*Ack{nil, nil, nil}))
}

// TestClusterGainsCrossEcho: both nodes of eu gain slots, m1 just after
// us made the echo that answers m0's gain (it names m1's epoch before its
// gain). That echo's acknowledgement must not end us's echo to eu: m1
// waits for one that names its new epoch, and gets it. Before, the
// acknowledgement cleared it and m1 denied its slot's keys for a whole
// window (seen in TestRegionProcessCluster: 0 of a key admitted in eu).
func TestClusterGainsCrossEcho(t *testing.T) {
	eu, us := clusterRegions(t, 2)
	owner := func(k string) int { return map[string]int{"a": 0, "b": 1}[k] }
	now := t0 + int64(time.Millisecond)
	for range 3 {
		exchangeCluster(eu, us, owner, 0, now)
	}
	require.True(t, eu[0].Recovered() && eu[1].Recovered())
	now += int64(10 * time.Millisecond)
	eu[0].Gain(now, 1, func(key string) bool { return key == "a" }, nil)
	if b := eu[0].Sync(now)[1]; b != nil {
		eu[0].Acked(us.Receive(b, now), now) // us sees m0's new epoch
	}
	echo := us.Sync(now)[0] // it echoes: m0's new epoch, m1's old one
	require.NotEmpty(t, echo.EchoFor)
	eu[1].Gain(now+1, 1, func(key string) bool { return key == "b" }, nil)
	if b := eu[1].Sync(now)[1]; b != nil {
		eu[1].Acked(us.Receive(b, now), now) // us sees m1's new epoch
	}
	parts := Split(echo, len(eu), owner, 1)
	acks := make([]*Ack, len(parts))
	for i, p := range parts {
		acks[i] = eu[i].Receive(p.Batch, now)
	}
	us.Acked(Merge(echo, parts, acks), now)
	assert.True(t, eu[0].Recovered(), "m0: the echo named its epoch")
	assert.False(t, eu[1].Recovered(), "m1: the echo named its epoch before the gain")
	for range 3 {
		now += int64(10 * time.Millisecond)
		exchangeCluster(eu, us, owner, 1, now)
	}
	assert.True(t, eu[1].Recovered(), "us echoed again, for m1's new epoch")
}

// TestGainResendsOnlyGainedSlots: us holds 1,000 keys, each with units
// eu acknowledged; eu's m1 gains one slot, whose one key it must recover.
// With Config.Slot the gain names its slot: us resends and echoes that
// slot's key only, not its 1,000 (a gain was a restart of all of eu to
// us). Both ways m1 recovers and decides the key.
func TestGainResendsOnlyGainedSlots(t *testing.T) {
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Hour}
	slot := func(key string) int { return int(key[len(key)-1]) } // keys k…0 to k…9: ten slots
	for _, named := range []bool{false, true} {
		eu, us := clusterRegions(t, 2)
		if named {
			for _, s := range append(eu, us) {
				s.cfg.Slot = slot
			}
		}
		owner := func(key string) int { return map[bool]int{false: 0, true: 1}[key == "k0007"] }
		now := t0 + int64(time.Millisecond)
		for range 3 {
			exchangeCluster(eu, us, owner, 0, now)
		}
		for i := range 1000 {
			k := fmt.Sprintf("k%04d", i)
			require.True(t, us.Decide([]byte(k), lim, now, 1, false).Allowed)
			require.True(t, eu[owner(k)].Decide([]byte(k), lim, now, 1, false).Allowed)
		}
		for range 3 {
			now += int64(10 * time.Millisecond)
			exchangeCluster(eu, us, owner, 0, now)
		}
		gained := []int{slot("k0007")}
		eu[1].Gain(now, 1, func(key string) bool { return slot(key) == gained[0] }, gained)
		if b := eu[1].Sync(now)[1]; b != nil {
			eu[1].Acked(us.Receive(b, now), now) // us sees m1's new epoch
		}
		now += int64(10 * time.Millisecond)
		b := us.Sync(now)[0]
		t.Logf("gained slots named %v: us resends %d entries and echoes %d", named, len(b.Entries), len(b.Echo))
		if named {
			assert.Len(t, b.Entries, 100, "the keys of the gained slot")
			assert.Len(t, b.Echo, 100)
		} else {
			assert.Len(t, b.Entries, 1000, "every key")
			assert.Len(t, b.Echo, 1000)
		}
		parts := Split(b, len(eu), owner, 1)
		acks := make([]*Ack, len(parts))
		for i, p := range parts {
			acks[i] = eu[i].Receive(p.Batch, now)
		}
		us.Acked(Merge(b, parts, acks), now)
		assert.True(t, eu[1].Recovered())
		assert.Equal(t, Escrowed, eu[1].Decide([]byte("k0007"), lim, now, 1, false).Mode, "m1 decides the gained key")
	}
}
