package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLeaseAnswerForms: each form of a lease answer parses back to what
// was encoded, the third with its incarnation and its grant ages in whole milliseconds, and a
// truncated one is refused.
func TestLeaseAnswerForms(t *testing.T) {
	a := leaseAnswer{sent: 123456789 * int64(time.Microsecond), granted: true, deaths: 3, inc: 0xfeedface12345678,
		fenced: []string{"n1", "node-two"}, ages: []int64{1500*ms + 999*int64(time.Microsecond), 0}, from: "n0"}
	tests := []struct {
		form int
		want leaseAnswer
	}{
		{1, leaseAnswer{sent: a.sent, granted: true, deaths: 3, from: "n0"}},
		{2, leaseAnswer{sent: a.sent, granted: true, deaths: 3, fenced: a.fenced, from: "n0"}},
		{3, leaseAnswer{sent: a.sent, granted: true, deaths: 3, inc: a.inc, fenced: a.fenced, ages: []int64{1500 * ms, 0}, from: "n0"}},
	}
	for _, tt := range tests {
		msg := appendLeaseAnswer(nil, tt.form, a)
		require.Equal(t, [...]byte{1: msgLeaseAck, 2: msgLeaseAck2, 3: msgLeaseAck3}[tt.form], msg[0])
		got, ok := parseLeaseAnswer(msg[1:], tt.form)
		require.True(t, ok, "form %d", tt.form)
		assert.Equal(t, tt.want, got, "form %d", tt.form)
		_, ok = parseLeaseAnswer(msg[1:14], tt.form)
		if tt.form >= 2 {
			assert.False(t, ok, "form %d truncated in its fences", tt.form)
		}
	}
	got, ok := parseLeaseAnswer(appendLeaseAnswer(nil, 3, leaseAnswer{from: "n0"})[1:], 3)
	require.True(t, ok)
	assert.NotNil(t, got.ages, "a third-form answer fencing nobody still has ages: its sender's grants are known")
	_, ok = parseLeaseAnswer(appendLeaseAnswer(nil, 3, a)[1:len(appendLeaseAnswer(nil, 3, a))-len("n0")-2], 3)
	assert.False(t, ok, "the last age cut short")
}

// TestLeaseAnswerOlderFormIgnored: a member answers each request in every
// form this node sent it; once its newer form has come, its older forms'
// answers count no more (they would clear the grant ages the newer one
// brought), while a member heard only in an older form goes on counting.
func TestLeaseAnswerOlderFormIgnored(t *testing.T) {
	m := &Membership{forms: map[string]int{}}
	assert.True(t, m.heardForm("b", 1), "first answer, first form")
	assert.True(t, m.heardForm("b", 2))
	assert.True(t, m.heardForm("b", 3))
	assert.False(t, m.heardForm("b", 2), "second form after the third")
	assert.False(t, m.heardForm("b", 1), "first form after the third")
	assert.True(t, m.heardForm("b", 3))
	assert.True(t, m.heardForm("c", 2), "another member")
	assert.True(t, m.heardForm("c", 2))
}
