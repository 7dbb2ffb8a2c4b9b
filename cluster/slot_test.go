package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// The expected values are what Redis 7.0.15's CLUSTER KEYSLOT answered here, and the
// check value of CRC16/XMODEM from Redis's cluster specification.
func TestSlotMatchesRedis(t *testing.T) {
	assert.Equal(t, uint16(0x31C3), crc16([]byte("123456789")), "the spec's check value")
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"123456789", 12739},
		{"", 0},
		{"foo", 12182},
		{"bar", 5061},
		{"hello", 866},
		{"somekey", 11058},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},
		{"foo{{bar}}zap", 4015},
		{"foo{bar}{zap}", 5061},
		{"{}foo", 9500},
		{"foo{", 7673},
		{"a{b}c", 3300},
		{"{a}", 15495},
		{"{}", 15257},
	} {
		assert.Equal(t, tc.want, Slot([]byte(tc.key)), "Slot(%q)", tc.key)
	}
}

func TestHashTag(t *testing.T) {
	for _, tc := range []struct{ key, tag string }{
		{"{user1000}.following", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"nobraces", "nobraces"},
		{"a{b", "a{b"},
	} {
		assert.Equal(t, tc.tag, string(hashTag([]byte(tc.key))), "hashTag(%q)", tc.key)
	}
}

func BenchmarkSlot(b *testing.B) {
	key := []byte("user:12345:api")
	b.ReportAllocs()
	for b.Loop() {
		_ = Slot(key)
	}
}
