package cluster

// Slots is the number of hash slots keys are spread over, as in Redis Cluster.
const Slots = 16384

// crcTable is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes keys with. It is computed, not written out,
// so that it cannot hold a typo; buildCRCTable runs once per process via
// the package-level variable below, which is a constant in all but syntax.
var crcTable = buildCRCTable()

func buildCRCTable() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}

func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// Slot returns key's hash slot as Redis Cluster computes it: CRC16 of the
// key mod 16384, or of its hash tag, the bytes between the first '{' and the
// next '}', when that is not empty. Keys sharing a tag share a slot, so a
// client can keep related keys on one node.
func Slot(key []byte) int {
	return int(crc16(hashTag(key)) & (Slots - 1))
}

// hashTag returns the part of key that Slot hashes.
func hashTag(key []byte) []byte {
	for i, c := range key {
		if c != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}" is no tag: the whole key is hashed
				}
				return key[i+1 : j]
			}
		}
		return key // a '{' with no '}' after it
	}
	return key
}
