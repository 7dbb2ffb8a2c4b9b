package global

import "github.com/rlstore/rlstore/region"

// Regions of two versions interoperate: a batch is answered in its own
// wire version, and a region whose batch another refused for its version
// sends that one batches of the version it speaks. Version 3 lets an
// acknowledgement refuse single entries (a new key past --region-max-keys):
// to a version 2 region this one cannot say which, so it refuses the
// whole batch, which that region sends again later.

// version returns the wire version to send l's region.
func (l *link) version() byte {
	if v := l.wire.Load(); v != 0 {
		return byte(v)
	}
	return region.WireVersion
}

// downgrade takes the version l's region speaks from its refusal of a
// batch's version, and logs it once. Any other failure (the region may
// have restarted, upgraded: a version 3 region refuses a version 2 batch
// whose entries it must refuse) goes back to this region's version.
func (rn *Node) downgrade(l *link, msg string) {
	v := region.SpokenVersion(msg)
	if v == 0 {
		l.wire.Store(0)
		return
	}
	if byte(l.wire.Load()) == v {
		return
	}
	l.wire.Store(uint32(v))
	rn.log.Warn("region speaks an older sync version: sending it that version; it cannot refuse single keys, so upgrade it",
		"region", l.name, "addr", l.addr, "version", v, "ours", region.WireVersion)
}

// refusedAck returns why ack cannot answer a batch of version v, or "".
func refusedAck(ack *region.Ack, v byte) string {
	switch {
	case ack == nil:
		return "a batch of an earlier start of that region, or of an unknown one"
	case len(ack.Refused) > 0 && v < 3:
		return region.ErrAckVersion.Error()
	}
	return ""
}
