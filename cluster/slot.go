package cluster

import "bytes"

// Slots is the number of hash slots keys are spread over, as in Redis Cluster.
const Slots = 16384

// Slot returns key's hash slot as Redis Cluster computes it: CRC16 of the
// key mod 16384, or of its hash tag, the bytes between the first '{' and the
// next '}', when that is not empty. Keys sharing a tag share a slot, so a
// client can keep related keys on one node.
func Slot(key []byte) int {
	return int(crc16(hashTag(key)) & (Slots - 1))
}

// hashTag returns the part of key that Slot hashes.
func hashTag(key []byte) []byte {
	i := bytes.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := bytes.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key // a '{' with no '}' after it, or "{}", which is no tag
	}
	return key[i+1 : i+1+j]
}
