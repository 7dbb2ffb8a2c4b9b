package global

import (
	"bytes"
	"errors"
	"strconv"
	"time"

	"github.com/rlstore/rlstore/region"
)

// carry sends l's batches, one exchange at a time, and credits their
// acknowledgements, until done is closed. A failed exchange loses that
// batch only: the model sends what was not acknowledged again after Retry.
func (rn *Node) carry(l *link, done <-chan struct{}) {
	hdr := rn.rc.Header(rn.cfg.Name)
	var buf []byte
	for {
		var b *region.Batch
		select {
		case <-done:
			return
		case b = <-l.out:
		}
		hdr.Version = l.version()
		buf = region.AppendBatch(buf[:0], hdr, b)
		l.bufBytes.Store(int64(cap(buf)))
		addr := l.target()
		ack, err := rn.exchange(l, buf)
		l.busy.Store(false)
		if l.passed.Swap(false) {
			rn.nudge() // what changed during this exchange goes now, not at the next tick
		}
		if err != nil {
			l.fails.Add(1)
			if rn.gatewayAddr() == "" {
				l.rotate() // the cluster's other nodes take batches too (cluster.go)
			}
			msg := err.Error()
			rn.downgrade(l, msg) // wire.go
			if l.up.Swap(false) || l.lastErr.Load() == nil || *l.lastErr.Load() != msg {
				rn.log.Warn("region sync failed", "region", l.name, "addr", addr, "err", msg)
			}
			l.lastErr.Store(&msg)
			continue
		}
		if !l.up.Swap(true) {
			rn.log.Info("region sync up", "region", l.name, "addr", l.addr)
		}
		l.sent.Add(1)
		l.sentBytes.Add(int64(len(buf)))
		l.learn(ack.Addrs)
		now := rn.d.UnixNano()
		rn.mu.Lock()
		rn.st.Acked(ack, now)
		rn.chargeLocked()
		skew, _ := rn.st.Skew(ack.From)
		rn.mu.Unlock()
		rn.checkSkew(l, skew)
	}
}

// checkSkew logs when a region's measured clock skew passes the bound's
// assumption (--region-max-skew), and when it is back within it: past it,
// a sliding window's guard span may be too short for the bound to hold.
func (rn *Node) checkSkew(l *link, skew time.Duration) {
	over := skew > rn.rc.MaxSkew || -skew > rn.rc.MaxSkew
	switch {
	case over && !l.skewed:
		rn.log.Warn("region clock skew past --region-max-skew: the bound assumes it", "region", l.name, "skew", skew, "max", rn.rc.MaxSkew)
	case !over && l.skewed:
		rn.log.Info("region clock skew within --region-max-skew again", "region", l.name, "skew", skew)
	}
	l.skewed = over
}

// exchange sends one batch as RL.PEER REGION and reads the acknowledgement.
// A node of a clustered region that is not its gateway sends it through
// the gateway (cluster.go).
func (rn *Node) exchange(l *link, payload []byte) (*region.Ack, error) {
	addr := l.target()
	var body []byte
	var err error
	switch gw := rn.gatewayAddr(); {
	case gw != "":
		for _, w := range l.takeRelays() { // relays that came while this node was the gateway
			w.done <- relayAnswer{err: "ERR region sync: this node is no longer its region's gateway"}
		}
		l.relay = relayPayload(l.relay[:0], l.name, payload)
		l.bufBytes.Store(int64(cap(l.relay) + len(payload)))
		body, err = rn.call(gw, l.relay)
	default:
		if ws := l.takeRelays(); len(ws) > 0 {
			body, err = rn.exchangeBundle(l, addr, payload, ws) // bundle.go
			break
		}
		body, err = rn.call(addr, payload)
		if err == nil {
			l.messages.Add(1)
			l.carried.Add(1)
		}
	}
	if err != nil {
		return nil, err
	}
	name, ack, err := region.ReadAck(body)
	switch {
	case err != nil:
		return nil, err
	case name != l.name:
		return nil, errors.New("the region at " + l.addr + " is named " + strconv.Quote(name) + ", not " + strconv.Quote(l.name))
	}
	ack.From = rn.index[name]
	return ack, nil
}

// bulkReply returns a raw RESP reply's bulk string, or its error.
func bulkReply(raw []byte) ([]byte, error) {
	if len(raw) > 0 && raw[0] == '-' {
		return nil, errors.New(string(bytes.TrimRight(raw[1:], "\r\n")))
	}
	i := bytes.Index(raw, []byte("\r\n"))
	if len(raw) == 0 || raw[0] != '$' || i < 0 {
		return nil, errors.New("region sync: unexpected reply")
	}
	n, err := strconv.Atoi(string(raw[1:i]))
	if err != nil || n < 0 || len(raw) < i+2+n {
		return nil, errors.New("region sync: unexpected reply")
	}
	return raw[i+2 : i+2+n], nil
}

// errPlainRegion refuses a batch on a plain connection when region links are TLS.
var errPlainRegion = errors.New("a plain-text connection: this region takes batches over TLS only (--tls-cluster yes)")

// Receive is RL.PEER REGION payload, on a peer's connection (overTLS if it
// came over TLS): it counts the batch and returns its acknowledgement. A
// batch from a region this one does not know, or that decides under
// another bound, is refused with an error reply (refusal) that the sender
// logs.
//
// With a cluster, it is also a node's batch for its gateway to carry to
// another region (relay), the gateway's part of a batch for the owner
// of its keys' slots (part), and a node's ask for what this one holds of
// slots it gained (hand, handoff.go); a batch from another region is fanned out
// to the owners (cluster.go). It may also be a bundle of batches from a
// clustered region's gateway, answered with all their acknowledgements
// (bundle.go).
func (rn *Node) Receive(payload []byte, overTLS bool) (ack []byte, refusal string) {
	if len(payload) > 0 && (payload[0] == msgRelay || payload[0] == msgPart || payload[0] == msgPull) {
		switch {
		case rn.cfg.Cluster == nil:
			return nil, rn.refuse(errNotClustered.Error())
		case rn.cfg.TLS && !overTLS:
			return nil, rn.refuse(errPlainRegion.Error())
		case payload[0] == msgRelay:
			return rn.relay(payload[1:])
		case payload[0] == msgPull:
			return rn.hand(payload[1:]) // handoff.go
		}
		return rn.part(payload[1:], overTLS)
	}
	if len(payload) > 0 && payload[0] == msgBundle {
		if rn.cfg.TLS && !overTLS {
			return nil, rn.refuse(errPlainRegion.Error())
		}
		return rn.receiveBundle(payload[1:], overTLS) // bundle.go
	}
	return rn.receiveBatch(payload, overTLS)
}

// receiveBatch is Receive of one batch from another region.
func (rn *Node) receiveBatch(payload []byte, overTLS bool) (ack []byte, refusal string) {
	h, b, idx, refusal := rn.readBatch(payload, overTLS)
	if refusal != "" {
		return nil, refusal
	}
	rn.receivedBytes.Add(int64(len(payload)))
	var a *region.Ack
	if rn.cfg.Cluster != nil {
		var msg string
		if a, msg = rn.fanOut(h, b, idx); msg != "" {
			return nil, msg
		}
	} else {
		a = rn.receiveLocal(b, idx)
	}
	if msg := refusedAck(a, h.Version); msg != "" {
		return nil, rn.refuse(msg)
	}
	return region.AppendAck(nil, h.Version, rn.cfg.Name, a), ""
}

// readBatch decodes a batch from another region and checks that this
// region takes it: over TLS if it must, under the same bound, from a
// region it knows. It returns the sender's index, or a refusal.
func (rn *Node) readBatch(payload []byte, overTLS bool) (region.Header, *region.Batch, int, string) {
	h, b, err := region.ReadBatch(payload)
	if err == nil && rn.cfg.TLS && !overTLS {
		err = errPlainRegion
	}
	if err == nil {
		err = rn.rc.Agrees(h)
	}
	idx, known := rn.index[h.Region]
	if err == nil && (!known || h.Region == rn.cfg.Name) {
		err = errors.New("unknown region " + strconv.Quote(h.Region))
	}
	if err != nil {
		return h, nil, 0, rn.refuse(err.Error())
	}
	return h, b, idx, ""
}

// receiveLocal counts a batch (or this node's part of one) from region idx.
func (rn *Node) receiveLocal(b *region.Batch, idx int) *region.Ack {
	b.From = idx
	rn.received.Add(1)
	kept, importing := rn.notImporting(b) // handoff.go
	now := rn.d.UnixNano()
	rn.mu.Lock()
	a := rn.st.Receive(kept, now)
	rn.chargeLocked()
	rn.mu.Unlock()
	if a != nil && len(importing) > 0 {
		a.Refused = refusedToo(a.Refused, importing)
	}
	return a
}

// refuse counts a refused batch and returns its error reply.
func (rn *Node) refuse(msg string) string {
	rn.refused.Add(1)
	rn.lastRefusal.Store(&msg)
	return "ERR region sync refused: " + msg
}

// since returns d in seconds for metrics, or -1 when never.
func since(d time.Duration, never bool) float64 {
	if never {
		return -1
	}
	return d.Seconds()
}
