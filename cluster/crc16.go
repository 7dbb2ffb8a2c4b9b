package cluster

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no final
// XOR), the checksum Redis Cluster hashes keys with. Every decision of a
// cluster node hashes its key, and every change shipped to a backup
// hashes it again, so it takes 8 bytes a step ("slicing by 8"): the eight
// table lookups of a step do not wait on each other, where a byte at a
// time each lookup waits on the one before.
func crc16(b []byte) uint16 {
	t := &crcTables
	var crc uint16
	for len(b) >= 8 {
		crc = t[7][byte(crc>>8)^b[0]] ^ t[6][byte(crc)^b[1]] ^
			t[5][b[2]] ^ t[4][b[3]] ^ t[3][b[4]] ^ t[2][b[5]] ^ t[1][b[6]] ^ t[0][b[7]]
		b = b[8:]
	}
	for _, c := range b {
		crc = crc<<8 ^ t[0][byte(crc>>8)^c]
	}
	return crc
}

// crcTables[k][i] is the CRC of byte i followed by k zero bytes: in
// polynomial terms, i·x^(16+8k) mod the generator. Row 0 is the classic
// byte-at-a-time table. In a step of 8 bytes the CRC so far is XORed into
// the first two, and byte j lands in row 7-j; the CRC is linear, so the
// step's result is the XOR of the eight rows' entries. The tables are
// computed, not written out, so that they cannot hold a typo;
// buildCRCTables runs once per process via the package-level variable.
var crcTables = buildCRCTables()

func buildCRCTables() (t [8][256]uint16) {
	for i := range t[0] {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[0][i] = crc
	}
	for k := 1; k < len(t); k++ {
		for i := range t[k] {
			p := t[k-1][i] // one zero byte more: shift it through row 0
			t[k][i] = p<<8 ^ t[0][p>>8]
		}
	}
	return t
}
