package shard

import (
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/rlstore/rlstore/policy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLedgerHash checks that a reservation ledger's name is ledgerPrefix
// and its key (policy.AppendLedgerKey), that its hash is its key's mixed,
// whether Map.hash reads it from the name or Reserve from the key's hash,
// that it picks its key's shard and another tag, and that no other key is
// hashed so: a policy's own ledger, its rule keys, plain keys.
func TestLedgerHash(t *testing.T) {
	m, err := New(Config{Shards: MaxShards})
	require.NoError(t, err)
	p := &policy.Policy{Name: "p"}
	for _, k := range []string{"", "a", "lp:reserve:1234", string(make([]byte, 300))} {
		key := []byte(k)
		ledger := policy.AppendLedgerKey(nil, key)
		require.Equal(t, ledgerPrefix+k, string(ledger), "policy.AppendLedgerKey's layout")
		h := m.hash(key)
		assert.Equal(t, xxhash.Sum64(key), h)
		assert.Equal(t, ledgerHash(h), m.hash(ledger))
		assert.Equal(t, ledgerHash(h), m.ledgerHashOf(key, h, ledger))
		assert.Same(t, m.shardFor(h), m.shardFor(m.hash(ledger)))
		assert.NotEqual(t, tagOf(fold(h)), tagOf(fold(m.hash(ledger))))
		for _, other := range [][]byte{p.AppendLedgerKey(nil, key), p.AppendRuleKey(nil, 0, key), p.AppendPenaltyKey(nil, key)} {
			assert.False(t, isLedger(other), "%q", other)
			assert.Equal(t, xxhash.Sum64(other), m.hash(other), "%q", other)
		}
	}
	// A ledger that is not the key's is hashed from its own bytes.
	assert.Equal(t, m.hash([]byte(ledgerPrefix+"b")), m.ledgerHashOf([]byte("ab"), m.hash([]byte("ab")), []byte(ledgerPrefix+"b")))
}
