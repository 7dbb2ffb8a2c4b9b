package decide

import (
	"math"
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/tidwall/redcon"
)

func TestCeilMs(t *testing.T) {
	cases := map[time.Duration]int64{
		0: 0, -5: 0, 1: 1, time.Millisecond: 1, time.Millisecond + 1: 2,
		999 * time.Microsecond: 1, time.Second: 1000, math.MaxInt64: math.MaxInt64/int64(time.Millisecond) + 1,
	}
	for in, want := range cases {
		assert.Equalf(t, want, CeilMs(in), "CeilMs(%v)", in)
	}
	assert.Equal(t, int64(-1), WaitMs(window.Never))
}

func TestAppendDecision(t *testing.T) {
	d := window.Decision{Allowed: true, Limit: 10, Remaining: 3, Wait: 0, Reset: 1500*time.Millisecond + 1}
	assert.Equal(t, "*5\r\n:1\r\n:10\r\n:3\r\n:0\r\n:1501\r\n", string(AppendDecision(nil, d)))
	d = window.Decision{Limit: 10, Remaining: 10, Wait: window.Never}
	assert.Equal(t, "*5\r\n:0\r\n:10\r\n:10\r\n:-1\r\n:0\r\n", string(AppendDecision(nil, d)))
}

// TestPutInt checks the decision reply's integers against redcon's
// writer, at every edge of the digit loop and of int64.
func TestPutInt(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 59999, 60000, -1, -9, -10, -100, -12345,
		math.MaxInt64, math.MinInt64, math.MaxInt64 - 1, math.MinInt64 + 1, math.MaxUint32, 1 << 53}
	for p := int64(1); p > 0 && p <= math.MaxInt64/10; p *= 10 {
		vals = append(vals, p-1, p, p+1, -p)
	}
	for _, v := range vals {
		b := make([]byte, MaxReply)
		n := PutInt(b, 0, v)
		assert.Equal(t, string(redcon.AppendInt(nil, v)), string(b[:n]), "%d", v)
	}
	d := window.Decision{Allowed: true, Limit: math.MaxInt64, Remaining: math.MinInt64, Wait: math.MaxInt64, Reset: math.MaxInt64}
	want := redcon.AppendArray(nil, 5)
	for _, v := range Fields(d) {
		want = redcon.AppendInt(want, v)
	}
	assert.Equal(t, string(want), string(AppendDecision([]byte("x"), d))[1:])
}

// AppendWithID writes what redcon's appenders write, for fields of every
// length and sign and ids short and long, after what dst held.
func TestAppendWithID(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 99, 100, 12345, 100000, -1, -10, math.MaxInt64, math.MinInt64}
	ids := [][]byte{{}, []byte("a"), []byte("123456789"), []byte("0123456789"), make([]byte, 256)}
	for _, id := range ids {
		for i, v := range vals {
			rest := [4]int64{vals[(i+1)%len(vals)], v, vals[(i+5)%len(vals)], vals[(i+7)%len(vals)]}
			want := redcon.AppendArray([]byte("x"), 6)
			want = redcon.AppendInt(want, v)
			want = redcon.AppendBulk(want, id)
			for _, r := range rest {
				want = redcon.AppendInt(want, r)
			}
			assert.Equal(t, string(want), string(AppendWithID([]byte("x"), v, id, rest)), "%d %q", v, id)
		}
	}
}
