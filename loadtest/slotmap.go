package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// slotCount is Redis Cluster's number of hash slots.
const slotCount = 16384

// slotMap says which node owns each slot, as a cluster-aware client reads
// it from CLUSTER NODES: owner[slot] indexes addrs.
type slotMap struct {
	addrs []string
	owner [slotCount]uint16
}

// readSlotMap asks the node at addr for the cluster's slot map. Every slot
// must have an owner.
func readSlotMap(ctx context.Context, addr string) (*slotMap, error) {
	cl, err := resp.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rep, err := cl.DoOK(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseClusterNodes(string(rep.Str))
}

// parseClusterNodes reads Redis Cluster's CLUSTER NODES lines:
// "id host:port@cport[,hostname] flags master ping pong epoch state slot...".
func parseClusterNodes(text string) (*slotMap, error) {
	m := &slotMap{}
	var owned [slotCount]bool
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		node := uint16(len(m.addrs))
		m.addrs = append(m.addrs, addr)
		for _, r := range f[8:] {
			from, to, err := slotRange(r)
			if err != nil {
				return nil, err
			}
			for s := from; s <= to; s++ {
				m.owner[s], owned[s] = node, true
			}
		}
	}
	for s, ok := range owned {
		if !ok {
			return nil, fmt.Errorf("loadtest: slot %d has no owner in CLUSTER NODES", s)
		}
	}
	return m, nil
}

func slotRange(r string) (int, int, error) {
	a, b, isRange := strings.Cut(r, "-")
	from, err := strconv.Atoi(a)
	to := from
	if err == nil && isRange {
		to, err = strconv.Atoi(b)
	}
	if err != nil || from < 0 || to >= slotCount || from > to {
		return 0, 0, fmt.Errorf("loadtest: bad slot range %q in CLUSTER NODES", r)
	}
	return from, to, nil
}

// keySlot is Redis Cluster's slot of key: CRC16 (XMODEM) of the key, or of
// its hash tag (the part between the first '{' and the next '}', when not
// empty), mod 16384.
func keySlot(key []byte) int {
	if i := bytes.IndexByte(key, '{'); i >= 0 {
		if j := bytes.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % slotCount)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial 0), a byte at a time
// from crcTable. Bit by bit it was a fifth of a cluster-aware run's client
// CPU (rlload --cpuprofile), on the cores the servers share.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^c]
	}
	return crc
}

// crcTable is crc16's table, computed rather than written out so that it
// cannot hold a typo; the package-level variable below builds it once, a
// constant in all but syntax.
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
