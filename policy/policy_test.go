package policy

import (
	"testing"
	"time"

	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseRoundTrips(t *testing.T) {
	p, err := Parse("api", []string{"slide", "10", "1m", "TOKEN", "5", "1", "500ms", "penalty", "30s", "Shadow"})
	require.NoError(t, err)
	assert.Equal(t, []window.Params{
		{Kind: window.KindSlide, Limit: 10, Period: time.Minute},
		{Kind: window.KindToken, Limit: 5, Rate: 1, Period: 500 * time.Millisecond},
	}, p.Rules)
	assert.Equal(t, 30*time.Second, p.Penalty)
	assert.True(t, p.Shadow)
	assert.Equal(t, "SLIDE 10 1m TOKEN 5 1 500ms PENALTY 30s SHADOW", p.Encode())
	again, err := Decode("api", p.Encode())
	require.NoError(t, err)
	assert.Equal(t, p, again)
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		words []string
		want  Error
	}{
		{"", []string{"FIXED", "1", "1"}, errName},
		{"p", []string{"SHADOW"}, "ERR a policy needs at least one rule: SLIDE limit window | TOKEN capacity rate period | FIXED limit window | LOG limit window | LEAKY capacity rate period"},
		{"p", []string{"FIXED", "1"}, errRuleArgs},
		{"p", []string{"BOGUS", "1", "1"}, ErrSyntax},
		{"p", []string{"FIXED", "1", "1", "PENALTY"}, ErrSyntax},
		{"p", []string{"FIXED", "1", "1", "PENALTY", "0"}, errPenalty},
		{"p", []string{"SLIDE", "1", "1500ms"}, errWindowWhole},
		{"p", []string{"LOG", "4001", "60"}, errLogLimit},
		{"p", []string{"LEAKY", "1", "2000000", "1ms"}, errRateFast},
		{"p", []string{"FIXED", "x", "60"}, ErrNotInt},
	} {
		_, err := Parse(tc.name, tc.words)
		assert.Equalf(t, tc.want, err, "%q", tc.words)
	}
	many := []string{}
	for range MaxRules + 1 {
		many = append(many, "FIXED", "1", "60")
	}
	_, err := Parse("p", many)
	assert.Equal(t, errRules, err)
}

// TestParseParamsAgreesWithWindow checks that whatever the parser accepts,
// the store accepts too, for every algorithm.
func TestParseParamsAgreesWithWindow(t *testing.T) {
	for _, tc := range []struct {
		kind window.Kind
		args []string
	}{
		{window.KindSlide, []string{"4294967295", "3650d"}}, {window.KindSlide, []string{"7", "3601"}},
		{window.KindToken, []string{"1", "1000000", "1ms"}}, {window.KindLeaky, []string{"10", "1", "3650d"}},
		{window.KindFixed, []string{"1", "1ms"}}, {window.KindLog, []string{"4000", "1h"}},
	} {
		var b [][]byte
		for _, a := range tc.args {
			b = append(b, []byte(a))
		}
		p, err := ParseParams(tc.kind, b)
		require.NoErrorf(t, err, "%v %q", tc.kind, tc.args)
		assert.NoError(t, p.Validate())
		assert.Equal(t, tc.kind, p.Kind)
	}
}

func TestRuleKeysAndRoute(t *testing.T) {
	p := &Policy{Name: "pol\x00x", Rules: make([]window.Params, 4)}
	k := p.AppendRuleKey(nil, 3, []byte("user"))
	assert.True(t, Reserved(k))
	assert.Equal(t, "user", string(Route(k)))
	assert.Equal(t, "user", string(Route(p.AppendPenaltyKey(nil, []byte("user")))))
	assert.NotEqual(t, k, p.AppendPenaltyKey(nil, []byte("user")))
	assert.Equal(t, "plain", string(Route([]byte("plain"))), "a user key is its own route")
	assert.Equal(t, "\xffp\x05ab", string(Route([]byte("\xffp\x05ab"))), "a malformed internal key is its own route")
	assert.False(t, Reserved([]byte("\xff")))
}

// TestAppendCharged: a key's ledger is charged to the key; a policy's, to
// the rule key of each index a policy may hold; any other key, to none.
func TestAppendCharged(t *testing.T) {
	user := []byte("user")
	k, ok := AppendCharged([]byte("x"), AppendLedgerKey(nil, user), 0)
	assert.True(t, ok)
	assert.Equal(t, "xuser", string(k), "appended to dst")
	_, ok = AppendCharged(nil, AppendLedgerKey(nil, user), 1)
	assert.False(t, ok, "a key's ledger is charged to the key alone")

	p := &Policy{Name: "pol\x00x", Rules: make([]window.Params, 2)}
	ledger := p.AppendLedgerKey(nil, user)
	for i := range MaxRules {
		k, ok := AppendCharged(nil, ledger, i)
		require.True(t, ok, "rule %d", i)
		assert.Equal(t, p.AppendRuleKey(nil, i, user), k, "rule %d", i)
	}
	_, ok = AppendCharged(nil, ledger, MaxRules)
	assert.False(t, ok, "past the last rule a policy may hold")

	for _, key := range [][]byte{user, p.AppendRuleKey(nil, 0, user), p.AppendPenaltyKey(nil, user), []byte("\xffp\x05ab")} {
		_, ok := AppendCharged(nil, key, 0)
		assert.False(t, ok, "%q is no ledger", key)
	}
}
