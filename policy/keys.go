package policy

import "encoding/binary"

// A policy keeps each rule's state for a user key under an internal key:
//
//	"\xffp" uvarint(len(policy)) policy rule key
//
// where rule is one byte, the rule's index or penaltyRule. The user key comes
// last, so a store that picks a shard by Route keeps every rule of one policy
// on one key under one lock. Keys that start with reservedPrefix are the
// store's: a server must not let clients name them (Reserved).
const (
	reservedPrefix = "\xffp"
	penaltyRule    = 0xff // the rule byte of a policy's penalty state
	ledgerRule     = 0xfe // with no policy name, which no policy has: a key's RL.RESERVE ledger
)

// Reserved reports whether key is one of the internal keys policies keep their state under.
func Reserved(key []byte) bool {
	return len(key) >= 2 && key[0] == reservedPrefix[0] && key[1] == reservedPrefix[1]
}

// AppendRuleKey appends the internal key of rule i of p for key to dst.
func (p *Policy) AppendRuleKey(dst []byte, i int, key []byte) []byte {
	return appendKey(dst, p.Name, byte(i), key)
}

// AppendPenaltyKey appends the internal key of p's penalty for key to dst.
func (p *Policy) AppendPenaltyKey(dst []byte, key []byte) []byte {
	return appendKey(dst, p.Name, penaltyRule, key)
}

func appendKey(dst []byte, policy string, rule byte, key []byte) []byte {
	dst = append(dst, reservedPrefix...)
	dst = binary.AppendUvarint(dst, uint64(len(policy)))
	dst = append(dst, policy...)
	dst = append(dst, rule)
	return append(dst, key...)
}

// Route returns the key whose shard key's state lives in: for an internal
// key, the user key it embeds; for any other key, key itself. A store that
// reloads internal keys from disk routes them with it.
func Route(key []byte) []byte {
	if !Reserved(key) {
		return key
	}
	n, k := binary.Uvarint(key[2:])
	if k <= 0 || n >= uint64(len(key)) || 2+k+int(n)+1 > len(key) {
		return key // not one of ours after all: its own route
	}
	return key[2+k+int(n)+1:]
}

// AppendLedgerKey appends the internal key of the ledger of key's
// reservations against p (RL.RESERVE key POLICY name), which Route finds
// key in as it does p's rule keys.
func (p *Policy) AppendLedgerKey(dst, key []byte) []byte {
	return appendKey(dst, p.Name, ledgerRule, key)
}

// AppendLedgerKey appends the internal key of key's reservation ledger
// (RL.RESERVE) to dst: a policy key with no policy name, which no policy
// can have, so Route finds key in it.
func AppendLedgerKey(dst, key []byte) []byte { return appendKey(dst, "", ledgerRule, key) }

// RuleOf returns the policy and the rule index an internal key holds the
// state of, or false for any other key (a penalty's, a ledger's, or not
// an internal key).
func RuleOf(key []byte) (name []byte, rule int, ok bool) {
	if !Reserved(key) {
		return nil, 0, false
	}
	n, k := binary.Uvarint(key[2:])
	if k <= 0 || n >= uint64(len(key)) || 2+k+int(n)+1 > len(key) {
		return nil, 0, false
	}
	name, r := key[2+k:2+k+int(n)], key[2+k+int(n)]
	if len(name) == 0 || r == penaltyRule || r == ledgerRule {
		return nil, 0, false
	}
	return name, int(r), true
}

// AppendCharged appends to dst the i-th key the reservations in ledger, a
// ledger's internal key, are charged to, and reports false past the last:
// for a key's ledger (AppendLedgerKey), the key; for a policy's
// (Policy.AppendLedgerKey), its rule key i for every rule a policy may
// hold (MaxRules), since a ledger does not know how many its policy has.
// Any other key is charged nothing.
func AppendCharged(dst, ledger []byte, i int) ([]byte, bool) {
	if !Reserved(ledger) {
		return dst, false
	}
	n, k := binary.Uvarint(ledger[2:])
	if k <= 0 || n >= uint64(len(ledger)) || 2+k+int(n)+1 > len(ledger) {
		return dst, false
	}
	at := 2 + k + int(n) // the rule byte
	switch {
	case ledger[at] != ledgerRule:
		return dst, false
	case n == 0 && i == 0:
		return append(dst, ledger[at+1:]...), true
	case n == 0 || i >= MaxRules:
		return dst, false
	}
	dst = append(dst, ledger[:at]...)
	dst = append(dst, byte(i))
	return append(dst, ledger[at+1:]...), true
}
