package region

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/rlstore/rlstore/window"
)

// WireVersion is the version of the batch and acknowledgement encoding. A
// region refuses a batch of another version, so versions can be added.
const WireVersion = 2

// Wire errors.
var (
	ErrWireVersion = errors.New("region: unsupported sync version")
	ErrWire        = errors.New("region: malformed sync message")
)

// Header is what a batch says of its sender, for the receiver to map the
// sender to its index and to check that both decide under the same bound.
type Header struct {
	Region  string // the sender's name
	Regions int
	Escrow  float64
	Reserve float64
	MaxSkew time.Duration
}

// Header returns c's header for a region named name.
func (c Config) Header(name string) Header {
	return Header{Region: name, Regions: c.Regions, Escrow: c.Escrow, Reserve: c.Reserve, MaxSkew: c.MaxSkew}
}

// Agrees reports why h's sender cannot share limits with a region of c, or nil.
func (c Config) Agrees(h Header) error {
	if h.Regions != c.Regions || h.Escrow != c.Escrow || h.Reserve != c.Reserve || h.MaxSkew != c.MaxSkew {
		return fmt.Errorf("region %q has regions=%d escrow=%g reserve=%g max-skew=%v, this one regions=%d escrow=%g reserve=%g max-skew=%v",
			h.Region, h.Regions, h.Escrow, h.Reserve, h.MaxSkew, c.Regions, c.Escrow, c.Reserve, c.MaxSkew)
	}
	return nil
}

// AppendBatch appends b's encoding, entries grouped by key: a key's name
// and limit once, then its buckets.
func AppendBatch(dst []byte, h Header, b *Batch) []byte {
	dst = append(dst, WireVersion)
	dst = appendString(dst, h.Region)
	dst = binary.AppendUvarint(dst, uint64(h.Regions))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.Escrow))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.Reserve))
	dst = binary.AppendVarint(dst, int64(h.MaxSkew))
	dst = binary.AppendUvarint(dst, b.Seq)
	dst = binary.AppendVarint(dst, b.SentAt)
	dst = binary.AppendVarint(dst, b.Final)
	dst = binary.AppendVarint(dst, b.Epoch)
	dst = binary.AppendVarint(dst, b.EchoFor)
	dst = appendEntries(dst, b.Entries)
	return appendEntries(dst, b.Echo)
}

// appendEntries appends how many runs of one key follow, then each run:
// the key, its limit, how many buckets, and each bucket and count.
func appendEntries(dst []byte, es []Entry) []byte {
	runs := 0
	for i := range es {
		if i == 0 || es[i].Key != es[i-1].Key || es[i].Limit != es[i-1].Limit {
			runs++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(runs))
	for i := 0; i < len(es); {
		j := i + 1
		for j < len(es) && es[j].Key == es[i].Key && es[j].Limit == es[i].Limit {
			j++
		}
		e := es[i]
		dst = appendString(dst, e.Key)
		dst = append(dst, byte(e.Limit.Kind))
		dst = binary.AppendUvarint(dst, uint64(e.Limit.Limit))
		dst = binary.AppendVarint(dst, int64(e.Limit.Window))
		dst = binary.AppendUvarint(dst, uint64(j-i))
		for _, e := range es[i:j] {
			dst = binary.AppendVarint(dst, e.Bucket)
			dst = binary.AppendVarint(dst, e.Count)
		}
		i = j
	}
	return dst
}

// readEntries reads what appendEntries wrote.
func (r *reader) entries() []Entry {
	var es []Entry
	runs := r.uvarint()
	for range min(runs, uint64(len(r.p))) {
		key := r.string()
		lim := Limit{Kind: window.Kind(r.byte()), Limit: int64(r.uvarint()), Window: time.Duration(r.varint())}
		n := r.uvarint()
		for i := uint64(0); i < n && r.err == nil; i++ {
			es = append(es, Entry{Key: key, Limit: lim, Bucket: r.varint(), Count: r.varint()})
		}
	}
	if runs > uint64(len(r.p))+uint64(len(es)) && r.err == nil {
		r.fail()
	}
	return es
}

// ReadBatch decodes a batch. Its From is left for the caller, which knows
// the sender by h.Region.
func ReadBatch(p []byte) (Header, *Batch, error) {
	r := reader{p: p}
	var h Header
	if v := r.byte(); r.err == nil && v != WireVersion {
		return h, nil, fmt.Errorf("%w %d (this region speaks %d)", ErrWireVersion, v, WireVersion)
	}
	h.Region = r.string()
	h.Regions = int(r.uvarint())
	h.Escrow = math.Float64frombits(r.uint64())
	h.Reserve = math.Float64frombits(r.uint64())
	h.MaxSkew = time.Duration(r.varint())
	b := &Batch{Seq: r.uvarint(), SentAt: r.varint(), Final: r.varint(), Epoch: r.varint(), EchoFor: r.varint()}
	b.Entries = r.entries()
	b.Echo = r.entries()
	if r.err == nil && len(r.p) > 0 {
		r.err = ErrWire
	}
	if r.err != nil {
		return h, nil, r.err
	}
	return h, b, nil
}

// AppendAck appends a's encoding, from the region named name.
func AppendAck(dst []byte, name string, a *Ack) []byte {
	dst = append(dst, WireVersion)
	dst = appendString(dst, name)
	dst = binary.AppendUvarint(dst, a.Seq)
	dst = binary.AppendVarint(dst, a.SentAt)
	dst = binary.AppendVarint(dst, a.RecvAt)
	return binary.AppendVarint(dst, a.Epoch)
}

// ReadAck decodes an acknowledgement and the name of the region that sent it.
func ReadAck(p []byte) (string, *Ack, error) {
	r := reader{p: p}
	if v := r.byte(); r.err == nil && v != WireVersion {
		return "", nil, fmt.Errorf("%w %d (this region speaks %d)", ErrWireVersion, v, WireVersion)
	}
	name := r.string()
	a := &Ack{Seq: r.uvarint(), SentAt: r.varint(), RecvAt: r.varint(), Epoch: r.varint()}
	if r.err == nil && len(r.p) > 0 {
		r.err = ErrWire
	}
	return name, a, r.err
}

func appendString(dst []byte, s string) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(s))), s...)
}

// reader reads the encoding; after the first error every read returns zero.
type reader struct {
	p   []byte
	err error
}

func (r *reader) fail() { r.err, r.p = ErrWire, nil }

func (r *reader) byte() byte {
	if len(r.p) < 1 {
		r.fail()
		return 0
	}
	v := r.p[0]
	r.p = r.p[1:]
	return v
}

func (r *reader) uint64() uint64 {
	if len(r.p) < 8 {
		r.fail()
		return 0
	}
	v := binary.LittleEndian.Uint64(r.p)
	r.p = r.p[8:]
	return v
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.p)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.p)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.p = r.p[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > uint64(len(r.p)) {
		r.fail()
		return ""
	}
	s := string(r.p[:n])
	r.p = r.p[n:]
	return s
}
