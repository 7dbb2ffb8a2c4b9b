package region

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/window"
)

func TestWireRoundTrip(t *testing.T) {
	slide := Limit{Kind: window.KindSlide, Limit: 100, Window: time.Minute}
	fixed := Limit{Kind: window.KindFixed, Limit: 5, Window: 500 * time.Millisecond}
	b := &Batch{Seq: 7, SentAt: t0, Final: t0 - 5, Epoch: t0 - 9, EchoFor: []int64{3}, Member: "m1", Gained: []int{0, 1, 2, 7, 9000, 16383}, Entries: []Entry{
		{"a", slide, 10, 3}, {"a", slide, 11, 4}, {"b", fixed, 99, 1},
	}, Echo: []Entry{{"c", slide, 1, 1}}}
	h := Defaults(0, 3).Header("eu")
	gh, got, err := ReadBatch(AppendBatch(nil, h, b))
	require.NoError(t, err)
	assert.Equal(t, h, gh)
	assert.Equal(t, b, got)
	name, a, err := ReadAck(AppendAck(nil, WireVersion, "us", &Ack{Seq: 7, SentAt: t0, RecvAt: t0 + 1, Epoch: 2, Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379"}}))
	require.NoError(t, err)
	assert.Equal(t, "us", name)
	assert.Equal(t, &Ack{Seq: 7, SentAt: t0, RecvAt: t0 + 1, Epoch: 2, Addrs: []string{"10.0.0.1:6379", "10.0.0.2:6379"}}, a)
	_, a, err = ReadAck(AppendAck(nil, 3, "us", &Ack{Seq: 7, Addrs: []string{"x:1"}}))
	require.NoError(t, err)
	assert.Empty(t, a.Addrs, "version 3 has no addresses")

	_, _, err = ReadBatch([]byte{6, 0})
	assert.ErrorIs(t, err, ErrWireVersion)
	assert.ErrorContains(t, err, "version 6 (this region speaks 2 to 5)")

	// Version 3, to a region of one node that speaks no newer: one epoch
	// echoed, no member.
	h3 := h
	h3.Version = 3
	_, got, err = ReadBatch(AppendBatch(nil, h3, b))
	require.NoError(t, err)
	want := *b
	want.Member, want.Gained = "", nil
	assert.Equal(t, &want, got)
	h4 := h
	h4.Version = 4
	_, got, err = ReadBatch(AppendBatch(nil, h4, b))
	require.NoError(t, err)
	assert.Nil(t, got.Gained, "version 4 names no gained slots")
	assert.Equal(t, byte(4), appendSlots(nil, b.Gained)[0], "four runs: 0-2, 7, 9000, 16383")
	var r reader
	r.p = appendSlots(nil, []int{16383})
	r.p[len(r.p)-1] = 2 // a run of two from the last slot: past the slots
	assert.Nil(t, r.slots())
	assert.ErrorIs(t, r.err, ErrWire)
	_, _, err = ReadBatch(AppendBatch(nil, h, b)[:20])
	assert.ErrorIs(t, err, ErrWire)
	assert.Error(t, Defaults(0, 3).Agrees(Defaults(0, 2).Header("x")))
	assert.NoError(t, Defaults(0, 3).Agrees(h))
}

// FuzzReadBatch reads any bytes as a batch and, if they decode, feeds the
// batch to a store: nothing may panic, and a re-encoding decodes the same.
func FuzzReadBatch(f *testing.F) {
	b := &Batch{Seq: 1, SentAt: t0, Entries: []Entry{{"k", Limit{Kind: window.KindSlide, Limit: 10, Window: time.Second}, 1_800_000_000, 2}}}
	f.Add(AppendBatch(nil, Defaults(1, 2).Header("x"), b))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, p []byte) {
		h, b, err := ReadBatch(p)
		if err != nil {
			return
		}
		_, again, err := ReadBatch(AppendBatch(nil, h, b))
		require.NoError(t, err)
		require.Equal(t, len(b.Entries), len(again.Entries))
		s, _ := New(Defaults(0, 2))
		b.From = 1
		s.Receive(b, t0)
		s.Sync(t0)
		s.Sweep(t0, 100)
	})
}
