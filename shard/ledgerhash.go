package shard

// ledgerPrefix is the head of the name of a key's reservation ledger
// (policy.AppendLedgerKey: the internal keys' "\xffp", a policy name of
// length 0 and the ledger's rule byte), which the key itself follows.
const ledgerPrefix = "\xffp\x00\xfe"

// ledgerMix turns a key's hash into its ledger's (ledgerHash). Its low 16
// bits are 0, so that the ledger's hash picks its key's shard (MaxShards)
// as a route would; the bits fold keeps differ, so the two keys' tags do.
const ledgerMix = 0x9e3779b97f4a0000

// ledgerHash is the hash of the ledger of a key of hash h. A ledger is
// hashed from its key's hash, not from its own bytes (Map.hash), so that
// RL.RESERVE and RL.COMMIT hash once, not twice: about 95 instructions a
// command.
func ledgerHash(h uint64) uint64 { return h ^ ledgerMix }

// isLedger reports whether key is the name of a reservation ledger.
func isLedger(key []byte) bool {
	return len(key) >= len(ledgerPrefix) && key[0] == ledgerPrefix[0] && string(key[:len(ledgerPrefix)]) == ledgerPrefix
}

// ledgerHashOf returns m.hash(ledger) for ledger, the ledger of key (of
// hash h), which Reserve's callers promise (race-enabled builds check it).
func (m *Map) ledgerHashOf(key []byte, h uint64, ledger []byte) uint64 {
	if m.customHash || len(ledger) != len(ledgerPrefix)+len(key) || !isLedger(ledger) {
		return m.hash(ledger)
	}
	hl := ledgerHash(h)
	if checkHashes && hl != m.hash(ledger) {
		panic("shard: Reserve's ledger is not its key's")
	}
	return hl
}
