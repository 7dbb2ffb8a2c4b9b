package global

import (
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/rlstore/rlstore/region"
)

// A clustered region's gateway carries its other nodes' batches (relays)
// to another region bundled with its own: a relay waits at the gateway
// for the link's next exchange, which sends the gateway's batch and every
// relay waiting as one RL.PEER REGION message (msgBundle), and the
// receiving region answers with one message of every batch's
// acknowledgement (or refusal). So a region of n nodes sends another one
// message per sync, not n. A region takes bundles from wire version 5 on:
// to an older one (the link's version, wire.go) each relay goes on its own,
// as before.

// msgBundle is the first byte of a bundle: how many batches, then each,
// length first. Its reply: how many, then each acknowledgement, a status
// byte first (bundleAck, or bundleRefused and the refusal's text).
const msgBundle byte = 0xF2

const (
	bundleAck     byte = 0
	bundleRefused byte = 1
)

// bundleVersion is the first wire version that takes bundles.
const bundleVersion = 5

// maxBundle bounds the batches in one bundle: a relay past it waits for
// the next exchange.
const maxBundle = 64

// relayWait is a relay waiting at the gateway for its link's next
// exchange: its batch, and where the answer goes.
type relayWait struct {
	batch []byte
	done  chan relayAnswer // buffered: the carrier never waits on it
}

// relayAnswer is a relayed batch's answer: the other region's
// acknowledgement, or why there is none.
type relayAnswer struct {
	ack []byte
	err string
}

// relays is a link's queue of relays waiting for its next exchange.
type relays struct {
	mu      sync.Mutex
	waiting []*relayWait
}

// bundles reports whether l's region takes bundles.
func (l *link) bundles() bool { return l.version() >= bundleVersion }

// relayBundled queues a node's batch for l's next exchange and waits for
// its answer: at most a sync interval and the exchange's timeout.
func (rn *Node) relayBundled(l *link, batch []byte) ([]byte, string) {
	w := &relayWait{batch: batch, done: make(chan relayAnswer, 1)}
	rn.store.Hold(int64(cap(batch))) // in --maxmemory while it waits
	defer rn.store.Hold(-int64(cap(batch)))
	l.relays.mu.Lock()
	l.relays.waiting = append(l.relays.waiting, w)
	l.relays.mu.Unlock()
	t := time.NewTimer(2*rn.cfg.Sync + rn.cfg.Timeout)
	defer t.Stop()
	select {
	case a := <-w.done:
		if a.err == "" {
			rn.relayed.Add(1)
		}
		return a.ack, a.err
	case <-t.C:
		l.relays.mu.Lock()
		for i, x := range l.relays.waiting {
			if x == w {
				l.relays.waiting = append(l.relays.waiting[:i], l.relays.waiting[i+1:]...)
				break
			}
		}
		l.relays.mu.Unlock()
		return nil, "ERR region sync: the gateway's link to that region sent no exchange in time"
	}
}

// takeRelays takes up to maxBundle of l's waiting relays, oldest first.
func (l *link) takeRelays() []*relayWait {
	l.relays.mu.Lock()
	defer l.relays.mu.Unlock()
	n := min(len(l.relays.waiting), maxBundle)
	if n == 0 {
		return nil
	}
	out := make([]*relayWait, n)
	copy(out, l.relays.waiting)
	l.relays.waiting = append(l.relays.waiting[:0], l.relays.waiting[n:]...)
	return out
}

// appendBundle appends a bundle of the batches, encoded, to dst.
func appendBundle(dst []byte, batches ...[]byte) []byte {
	dst = append(dst, msgBundle)
	dst = binary.AppendUvarint(dst, uint64(len(batches)))
	for _, b := range batches {
		dst = binary.AppendUvarint(dst, uint64(len(b)))
		dst = append(dst, b...)
	}
	return dst
}

// errBundle: a bundle, or its reply, that does not parse.
var errBundle = errors.New("region sync: a malformed bundle")

// readBundle splits a bundle's payload (after msgBundle) into its batches.
func readBundle(p []byte) ([][]byte, error) {
	n, k := binary.Uvarint(p)
	if k <= 0 || n > maxBundle {
		return nil, errBundle
	}
	p = p[k:]
	out := make([][]byte, 0, n)
	for range n {
		m, k := binary.Uvarint(p)
		if k <= 0 || uint64(len(p)-k) < m {
			return nil, errBundle
		}
		out = append(out, p[k:k+int(m)])
		p = p[k+int(m):]
	}
	if len(p) > 0 {
		return nil, errBundle
	}
	return out, nil
}

// receiveBundle counts every batch of a bundle, as Receive counts one
// (concurrently in a cluster: each may be fanned out), and answers them
// all in one reply.
func (rn *Node) receiveBundle(p []byte, overTLS bool) ([]byte, string) {
	batches, err := readBundle(p)
	if err != nil {
		return nil, rn.refuse(err.Error())
	}
	answers := make([]relayAnswer, len(batches))
	if rn.cfg.Cluster != nil && len(batches) > 1 {
		var wg sync.WaitGroup
		for i, b := range batches {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i].ack, answers[i].err = rn.receiveBatch(b, overTLS)
			}()
		}
		wg.Wait()
	} else {
		for i, b := range batches {
			answers[i].ack, answers[i].err = rn.receiveBatch(b, overTLS)
		}
	}
	return appendAnswers(nil, answers), ""
}

// appendAnswers encodes a bundle's reply.
func appendAnswers(dst []byte, answers []relayAnswer) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(answers)))
	for _, a := range answers {
		if a.err != "" {
			dst = append(dst, bundleRefused)
			dst = binary.AppendUvarint(dst, uint64(len(a.err)))
			dst = append(dst, a.err...)
			continue
		}
		dst = append(dst, bundleAck)
		dst = binary.AppendUvarint(dst, uint64(len(a.ack)))
		dst = append(dst, a.ack...)
	}
	return dst
}

// readAnswers decodes a bundle's reply of n answers.
func readAnswers(p []byte, n int) ([]relayAnswer, error) {
	m, k := binary.Uvarint(p)
	if k <= 0 || m != uint64(n) {
		return nil, errBundle
	}
	p = p[k:]
	out := make([]relayAnswer, n)
	for i := range out {
		if len(p) < 1 {
			return nil, errBundle
		}
		st := p[0]
		l, k := binary.Uvarint(p[1:])
		if k <= 0 || uint64(len(p)-1-k) < l || st > bundleRefused {
			return nil, errBundle
		}
		body := p[1+k : 1+k+int(l)]
		if st == bundleRefused {
			out[i].err = string(body)
		} else {
			out[i].ack = body
		}
		p = p[1+k+int(l):]
	}
	if len(p) > 0 {
		return nil, errBundle
	}
	return out, nil
}

// exchangeBundle sends l's own batch (payload) and the relays waiting as
// one bundle, answers the relays, and returns the own batch's
// acknowledgement body.
func (rn *Node) exchangeBundle(l *link, addr string, payload []byte, ws []*relayWait) ([]byte, error) {
	bs := make([][]byte, 0, 1+len(ws))
	bs = append(bs, payload)
	for _, w := range ws {
		bs = append(bs, w.batch)
	}
	l.bundle = appendBundle(l.bundle[:0], bs...)
	l.bufBytes.Store(int64(cap(l.bundle) + cap(payload)))
	body, err := rn.call(addr, l.bundle)
	var answers []relayAnswer
	if err == nil {
		answers, err = readAnswers(body, len(bs))
	}
	if err != nil {
		for _, w := range ws {
			w.done <- relayAnswer{err: err.Error()}
		}
		return nil, err
	}
	l.carried.Add(int64(len(bs)))
	l.messages.Add(1)
	for i, w := range ws {
		a := answers[i+1]
		if a.err == "" {
			if _, ack, err := region.ReadAck(a.ack); err == nil {
				l.learn(ack.Addrs)
			}
		}
		w.done <- a
	}
	if own := answers[0]; own.err != "" {
		return nil, errors.New(own.err)
	}
	return answers[0].ack, nil
}
