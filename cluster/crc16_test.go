package cluster

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// crc16Bitwise is CRC-16/XMODEM a bit at a time, as the specification
// defines it: the model crc16's tables must agree with.
func crc16Bitwise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// Every length from 0 to 80 bytes crosses the 8-byte steps at every
// offset, with random bytes, all-ones bytes and zeros.
func TestCRC16MatchesBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 80; n++ {
		for range 50 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			require.Equal(t, crc16Bitwise(b), crc16(b), "% x", b)
		}
		ones := make([]byte, n)
		for i := range ones {
			ones[i] = 0xff
		}
		require.Equal(t, crc16Bitwise(ones), crc16(ones), "%d bytes of 0xff", n)
		require.Equal(t, crc16Bitwise(make([]byte, n)), crc16(make([]byte, n)), "%d zeros", n)
	}
}

func FuzzCRC16(f *testing.F) {
	f.Add([]byte("123456789"))
	f.Add([]byte("{user1000}.following"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if crc16(b) != crc16Bitwise(b) {
			t.Fatalf("crc16(% x) = %#x, bitwise %#x", b, crc16(b), crc16Bitwise(b))
		}
	})
}

func BenchmarkCRC16(b *testing.B) {
	for _, n := range []int{8, 16, 24, 40} {
		key := make([]byte, n)
		for i := range key {
			key[i] = 'a' + byte(i%26)
		}
		b.Run(string(rune('0'+n/10))+string(rune('0'+n%10))+"B", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = crc16(key)
			}
		})
	}
}
