package region

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

// TestMaxRemoteRefusesAndHolds: region 1 holds one key only for others
// (MaxRemote 1). Region 0's units of a second key are refused there, so
// region 0 does not count them acknowledged: past its escrow it admits no
// more of that key (no reserve), and when region 1 then decides the key
// itself, seeing none of region 0's units, the two together stay within
// L + e. Were the refused entries credited, region 0 would take the whole
// limit, region 1 too: 2·L.
func TestMaxRemoteRefusesAndHolds(t *testing.T) {
	st := newStores(t, 2, 0.1, 0) // L 100: e = 5, φ = 0
	st[1].cfg.MaxRemote = 1
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	now := t0
	require.True(t, st[0].Decide([]byte("a"), lim, now, 1, false).Allowed)
	exchange(st, now)
	require.Equal(t, 1, st[1].RemoteKeys())

	admitted := int64(0)
	for range 200 {
		now += int64(time.Millisecond)
		if st[0].Decide([]byte("b"), lim, now, 1, false).Allowed {
			admitted++
		}
		exchange(st, now)
	}
	assert.Equal(t, int64(5), admitted, "region 0's admissions of a key region 1 refuses: its escrow, no more")
	assert.False(t, st[1].Has([]byte("b")), "region 1 holds the refused key")
	assert.Equal(t, 1, st[1].RemoteKeys())
	s1, s0 := st[1].Stats(now), st[0].Stats(now)
	assert.Positive(t, s1.KeysRefused)
	assert.Equal(t, s1.KeysRefused, s0.PeerRefused, "every refusal reached the sender")

	for range 200 {
		now += int64(time.Millisecond)
		if st[1].Decide([]byte("b"), lim, now, 1, false).Allowed {
			admitted++
		}
		exchange(st, now)
	}
	assert.LessOrEqual(t, admitted, st[0].Config().Bound(lim.Limit), "both regions' admissions of b")
	assert.Equal(t, 1, st[1].RemoteKeys(), "b is region 1's own now; a is still held for region 0")
}

// TestMaxRemoteRoomAgain: a refused key is taken at the sender's next
// resend once the key held for others is gone (its window passed), and
// then region 0's units of it are acknowledged and its escrow frees.
func TestMaxRemoteRoomAgain(t *testing.T) {
	st := newStores(t, 2, 0.1, 0)
	st[1].cfg.MaxRemote = 1
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Second}
	now := t0
	st[0].Decide([]byte("a"), lim, now, 1, false)
	exchange(st, now)
	st[0].Decide([]byte("b"), lim, now, 1, false)
	exchange(st, now)
	require.False(t, st[1].Has([]byte("b")))
	now += int64(st[0].cfg.Hold + 10*time.Second) // a's and b's windows are long past: a is swept
	require.Positive(t, st[1].Sweep(now, 100))
	require.Zero(t, st[1].RemoteKeys())
	st[0].Decide([]byte("b"), lim, now, 1, false)
	exchange(st, now)
	assert.True(t, st[1].Has([]byte("b")), "room again: b is taken")
	assert.Zero(t, st[0].Stats(now).Unacked, "region 0's units of b are acknowledged")
}

// TestMaxRemoteCountsOwnedKeys: a key region 1 decides itself is not one
// held for others, and a held key it then decides stops being one.
func TestMaxRemoteCountsOwnedKeys(t *testing.T) {
	st := newStores(t, 2, 0.1, 0.5)
	st[1].cfg.MaxRemote = 1
	lim := Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	now := t0
	st[0].Decide([]byte("a"), lim, now, 1, false)
	st[1].Decide([]byte("mine"), lim, now, 1, false)
	st[0].Decide([]byte("mine"), lim, now, 1, false)
	exchange(st, now)
	assert.Equal(t, 1, st[1].RemoteKeys())
	assert.True(t, st[1].Has([]byte("mine")), "an owned key takes entries past the cap")
	assert.Equal(t, 2, st[1].Keys())
	st[1].Decide([]byte("a"), lim, now, 1, false)
	assert.Zero(t, st[1].RemoteKeys(), "a is region 1's own now")
	st[0].Decide([]byte("c"), lim, now, 1, false)
	exchange(st, now)
	assert.True(t, st[1].Has([]byte("c")), "room again")
}

func TestWireRefusedRoundTrip(t *testing.T) {
	a := &Ack{Seq: 7, SentAt: t0, RecvAt: t0 + 1, Epoch: 2, Refused: []int{0, 3, 4, 90}}
	name, got, err := ReadAck(AppendAck(nil, WireVersion, "us", a))
	require.NoError(t, err)
	assert.Equal(t, "us", name)
	assert.Equal(t, a, got)

	// Version 2 has no refused entries; it is still read, and batches of
	// version 2 too, with their header's version.
	_, got, err = ReadAck(AppendAck(nil, 2, "us", &Ack{Seq: 7, SentAt: t0}))
	require.NoError(t, err)
	assert.Equal(t, &Ack{Seq: 7, SentAt: t0}, got)
	h := Defaults(0, 3).Header("eu")
	h.Version = 2
	gh, _, err := ReadBatch(AppendBatch(nil, h, &Batch{Seq: 1}))
	require.NoError(t, err)
	assert.Equal(t, byte(2), gh.Version)
	_, _, err = ReadBatch(AppendBatch(nil, Header{Version: 1}, &Batch{}))
	assert.ErrorContains(t, err, "version 1 (this region speaks 2 to 5)")

	// What a version 2 region answers to a version 3 batch, and this one's
	// own refusal of a version too new: the version to send it.
	assert.Equal(t, byte(2), SpokenVersion("ERR region sync refused: region: unsupported sync version 3 (this region speaks 2)"))
	assert.Equal(t, byte(3), SpokenVersion("ERR region sync refused: region: unsupported sync version 4 (this region speaks 2 to 3)"), "a version 3 region: no members")
	assert.Equal(t, byte(4), SpokenVersion("ERR region sync refused: region: unsupported sync version 5 (this region speaks 2 to 4)"), "a version 4 region: no bundles")
	assert.Equal(t, byte(4), SpokenVersion("ERR region sync refused: region: unsupported sync version 242 (this region speaks 2 to 4)"), "its refusal of a bundle")
	assert.Equal(t, byte(0), SpokenVersion("ERR region sync refused: region: unsupported sync version 6 (this region speaks 2 to 5)"))
	assert.Equal(t, byte(0), SpokenVersion("ERR region sync refused: region: unsupported sync version 3 (this region speaks 1)"))
	assert.Equal(t, byte(0), SpokenVersion("connection refused"))
}
