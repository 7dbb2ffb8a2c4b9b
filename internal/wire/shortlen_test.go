package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// shortLen reads only what number reads the same, and leaves every other
// header to it: each of the 4-byte heads over a small alphabet, whole or cut.
func TestShortLen(t *testing.T) {
	alphabet := []byte("0159\r\n-x")
	var b [4]byte
	for _, x := range alphabet {
		for _, y := range alphabet {
			for _, z := range alphabet {
				for _, w := range alphabet {
					b = [4]byte{x, y, z, w}
					for n := 0; n <= 4; n++ {
						size, end := shortLen(b[:n], 0)
						if end == 0 {
							continue
						}
						want, wantEnd, err := number(b[:n], 0, 1<<40, ErrProtoBulk, ErrProtoBulk)
						assert.NoError(t, err, "%q", b[:n])
						assert.Equal(t, wantEnd, end, "%q", b[:n])
						assert.Equal(t, want, size, "%q", b[:n])
					}
				}
			}
		}
	}
	size, end := shortLen([]byte("$42\r\nx"), 1)
	assert.Equal(t, int64(42), size)
	assert.Equal(t, 5, end)
}
