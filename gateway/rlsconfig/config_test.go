package rlsconfig

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRejects checks that each mistake is refused, naming the file and line.
func TestRejects(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limt: {unit: second}\n", "f.yaml:4: config error, unknown key 'rate_limt' in a descriptor"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: second\n      request_per_unit: 1\n", "f.yaml:6: config error, unknown key 'request_per_unit' in a rate_limit"},
		{"domian: d\n", "f.yaml:1: config error, unknown key 'domian'"},
		{"descriptors: []\n", "f.yaml:1: config file cannot have empty domain"},
		{"domain: d\ndescriptors:\n  - value: a\n", "f.yaml:3: descriptor has empty key"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight, requests_per_unit: 1}\n", "f.yaml:4: invalid rate limit unit 'fortnight'"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, unlimited: true}\n", "should not specify rate limit unit when unlimited"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: -1}\n", "requests_per_unit must be an integer"},
		{"domain: d\ndescriptors:\n  - key: a\n  - key: a\n", "f.yaml:4: duplicate descriptor composite key 'd.a'"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, name: n, replaces: [{name: n}]}\n", "replaces should not contain name of same descriptor"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: ''}]}\n", "should not have an empty replaces entry"},
		{"domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: gcra}\n", "f.yaml:4: unknown algorithm 'gcra'"},
		{"domain: d\ndescriptors:\n  - key: a\n    value: b\n    share_threshold: true\n", "share_threshold can only be used with wildcard values"},
		{"domain: d\ndescriptors:\n  - key: a\n    shadow_mode: maybe\n", "f.yaml:4: shadow_mode must be true or false"},
		{"domain: [\n", "f.yaml: error loading config file"},
		{"domain: d\ndescriptors:\n  - key: a\n    metadata: [x]\n", "f.yaml:4: metadata must be a mapping"},
		{"domain: d\ndescriptors:\n  - key: a\n    shadow_mode: 'yes'\n", "f.yaml:4: shadow_mode must be true or false"},
		{"domain: d\ndescriptors:\n  - key: a\n    metadata: " + aliasBomb() + "\n", "holds more than 16384 values"},
	}
	for _, c := range cases {
		_, err := Load([]Source{{Name: "f.yaml", Data: []byte(c.yaml)}})
		require.Error(t, err, "%s", c.yaml)
		assert.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), c.want, "%s", c.yaml)
	}
	_, err := Load([]Source{{Name: "a.yaml", Data: []byte("domain: d\n")}, {Name: "b.yaml", Data: []byte("domain: d\n")}})
	assert.ErrorContains(t, err, "b.yaml: duplicate domain 'd' in config file")
}

// TestLookup checks matching and the stats keys envoyproxy/ratelimit gives.
func TestLookup(t *testing.T) {
	c, err := Load([]Source{{Name: "f.yaml", Data: []byte(`
domain: d
descriptors:
  - key: k
    value: exact
    rate_limit: {unit: second, requests_per_unit: 1}
  - key: k
    value: pre*
    rate_limit: {unit: second, requests_per_unit: 2}
  - key: k
    value: a*z
    value_to_metric: true
    rate_limit: {unit: second, requests_per_unit: 3}
  - key: k
    rate_limit: {unit: second, requests_per_unit: 4}
  - key: s
    value: x*
    share_threshold: true
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 5}
  - key: det
    detailed_metric: true
    rate_limit: {unit: minute, requests_per_unit: 6}
`)}})
	require.NoError(t, err)
	cases := []struct {
		entries    []Entry
		wantLimit  uint32
		wantMetric string
		wantShare  []string
	}{
		{[]Entry{{"k", "exact"}}, 1, "d.k_exact", nil},
		{[]Entry{{"k", "prefix"}}, 2, "d.k_pre*", nil},
		{[]Entry{{"k", "abcz"}}, 3, "d.k_abcz", nil},
		{[]Entry{{"k", "other"}}, 4, "d.k", nil},
		{[]Entry{{"s", "x1"}}, 5, "d.s_x*", []string{"x*"}},
		{[]Entry{{"det", "v"}}, 6, "d.det_v", nil},
		{[]Entry{{"det", ""}}, 6, "d.det_", nil}, // detailed keys keep the '_' of an empty value, as the reference's do
		{[]Entry{{"none", "v"}}, 0, "", nil},
	}
	for _, tc := range cases {
		m, known := c.Lookup("d", tc.entries)
		require.True(t, known)
		if tc.wantLimit == 0 {
			assert.Nil(t, m.Limit, "%v", tc.entries)
			continue
		}
		require.NotNil(t, m.Limit, "%v", tc.entries)
		assert.Equal(t, tc.wantLimit, m.Limit.RequestsPerUnit, "%v", tc.entries)
		assert.Equal(t, tc.wantMetric, m.MetricKey, "%v", tc.entries)
		assert.Equal(t, tc.wantShare, m.Share, "%v", tc.entries)
	}
	_, known := c.Lookup("other", []Entry{{"k", "exact"}})
	assert.False(t, known)
	assert.Equal(t, int64(30*86400), Month.Seconds())
	assert.Equal(t, int64(365*86400), Year.Seconds())
}

// aliasBomb is metadata whose aliases would expand to 10^8 values.
func aliasBomb() string {
	b := "{a: &a0 [x, x, x, x, x, x, x, x, x, x]"
	for i := 1; i < 8; i++ {
		b += fmt.Sprintf(", a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b + "}"
}

// TestMetadata checks that metadata is kept as JSON's values, for the
// response's dynamic metadata, and that plain scalars are read as YAML 1.1
// reads them, as the reference does.
func TestMetadata(t *testing.T) {
	c, err := Load([]Source{{Name: "f.yaml", Data: []byte("domain: d\ndescriptors:\n  - key: a\n    metadata: {s: x, n: 2, f: 1.5, b: true, z: null, l: [1, y, 'no'], m: {k: v, on: Off}}\n    shadow_mode: yes\n    rate_limit: {unit: second, requests_per_unit: 1}\n")}})
	require.NoError(t, err)
	m, _ := c.Lookup("d", []Entry{{Key: "a", Value: "v"}})
	require.NotNil(t, m.Limit)
	assert.Equal(t, map[string]any{"s": "x", "n": 2.0, "f": 1.5, "b": true, "z": nil, "l": []any{1.0, true, "no"}, "m": map[string]any{"k": "v", "true": false}}, m.Limit.Metadata,
		"YAML 1.1's booleans, as envoyproxy/ratelimit's yaml.v2 reads them (also as a nested key); a quoted one is a string")
	assert.True(t, m.Limit.ShadowMode, "shadow_mode: yes")
}
