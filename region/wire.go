package region

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/rlstore/rlstore/window"
)

// WireVersion is the version of the batch and acknowledgement encoding. A
// region refuses a batch of a version it does not speak, so versions can
// be added. Version 2 added the epoch and the echo; version 3 the
// acknowledgement's refused entries (Ack.Refused), and its batches are
// version 2's; version 4 the batch's member (the node of a clustered
// region that made it) and the epochs of every member an echo answers, and
// its acknowledgements are version 3's; version 5 the slots a clustered
// region's node gained (Batch.Gained), and its acknowledgements are
// version 4's, from a region that also takes several batches in one
// message (a clustered region's gateway bundles its nodes' batches,
// server/internal/global). A region answers a batch in the batch's
// version, and speaks every version from MinWireVersion on.
const WireVersion = 5

// MinWireVersion is the oldest version a region still speaks: a version 2
// batch is acknowledged in version 2, which cannot name refused entries,
// so a batch with one is refused whole (not acknowledged) instead.
const MinWireVersion = 2

// Wire errors.
var (
	ErrWireVersion = errors.New("region: unsupported sync version")
	ErrWire        = errors.New("region: malformed sync message")
)

// Header is what a batch says of its sender, for the receiver to map the
// sender to its index and to check that both decide under the same bound.
type Header struct {
	Version byte   // the encoding's: WireVersion, or an older one a peer speaks
	Region  string // the sender's name
	Regions int
	Escrow  float64
	Reserve float64
	MaxSkew time.Duration
}

// Header returns c's header for a region named name.
func (c Config) Header(name string) Header {
	return Header{Version: WireVersion, Region: name, Regions: c.Regions, Escrow: c.Escrow, Reserve: c.Reserve, MaxSkew: c.MaxSkew}
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
	dst = append(dst, h.Version)
	dst = appendString(dst, h.Region)
	dst = binary.AppendUvarint(dst, uint64(h.Regions))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.Escrow))
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(h.Reserve))
	dst = binary.AppendVarint(dst, int64(h.MaxSkew))
	dst = binary.AppendUvarint(dst, b.Seq)
	dst = binary.AppendVarint(dst, b.SentAt)
	dst = binary.AppendVarint(dst, b.Final)
	dst = binary.AppendVarint(dst, b.Epoch)
	if h.Version < 4 {
		var echoFor int64 // a region of one node: one epoch
		if len(b.EchoFor) > 0 {
			echoFor = b.EchoFor[len(b.EchoFor)-1]
		}
		dst = binary.AppendVarint(dst, echoFor)
	} else {
		dst = appendString(dst, b.Member)
		dst = binary.AppendUvarint(dst, uint64(len(b.EchoFor)))
		for _, e := range b.EchoFor {
			dst = binary.AppendVarint(dst, e)
		}
	}
	if h.Version >= 5 {
		dst = appendSlots(dst, b.Gained)
	}
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
	if h.Version = r.byte(); r.err == nil && (h.Version < MinWireVersion || h.Version > WireVersion) {
		return h, nil, versionError(h.Version)
	}
	h.Region = r.string()
	h.Regions = int(r.uvarint())
	h.Escrow = math.Float64frombits(r.uint64())
	h.Reserve = math.Float64frombits(r.uint64())
	h.MaxSkew = time.Duration(r.varint())
	b := &Batch{Seq: r.uvarint(), SentAt: r.varint(), Final: r.varint(), Epoch: r.varint()}
	if h.Version < 4 {
		if e := r.varint(); e != 0 {
			b.EchoFor = []int64{e}
		}
	} else {
		b.Member = r.string()
		n := r.uvarint()
		for i := uint64(0); i < n && r.err == nil; i++ {
			b.EchoFor = append(b.EchoFor, r.varint())
		}
	}
	if h.Version >= 5 {
		b.Gained = r.slots()
	}
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

// AppendAck appends a's encoding in version v (the batch's), from the
// region named name. Version 2 has no refused entries: the caller must
// not acknowledge a batch with some in it (ErrAckVersion).
func AppendAck(dst []byte, v byte, name string, a *Ack) []byte {
	dst = append(dst, v)
	dst = appendString(dst, name)
	dst = binary.AppendUvarint(dst, a.Seq)
	dst = binary.AppendVarint(dst, a.SentAt)
	dst = binary.AppendVarint(dst, a.RecvAt)
	dst = binary.AppendVarint(dst, a.Epoch)
	if v < 3 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(a.Refused)))
	last := -1
	for _, i := range a.Refused {
		dst = binary.AppendUvarint(dst, uint64(i-last-1)) // ascending: the gaps
		last = i
	}
	if v < 4 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(min(len(a.Addrs), MaxAckAddrs)))
	for _, addr := range a.Addrs[:min(len(a.Addrs), MaxAckAddrs)] {
		dst = appendString(dst, addr)
	}
	return dst
}

// MaxAckAddrs bounds the addresses an acknowledgement carries.
const MaxAckAddrs = 8

// ReadAck decodes an acknowledgement and the name of the region that sent it.
func ReadAck(p []byte) (string, *Ack, error) {
	r := reader{p: p}
	v := r.byte()
	if r.err == nil && (v < MinWireVersion || v > WireVersion) {
		return "", nil, versionError(v)
	}
	name := r.string()
	a := &Ack{Seq: r.uvarint(), SentAt: r.varint(), RecvAt: r.varint(), Epoch: r.varint()}
	if v >= 3 {
		n, next := r.uvarint(), uint64(0) // next: the least index the next may be
		for j := uint64(0); j < n && r.err == nil; j++ {
			i := next + r.uvarint()
			if i < next || i > math.MaxInt32 { // wrapped, or past any batch
				r.fail()
				break
			}
			a.Refused = append(a.Refused, int(i))
			next = i + 1
		}
	}
	if v >= 4 {
		n := r.uvarint()
		for j := uint64(0); j < n && j < MaxAckAddrs && r.err == nil; j++ {
			a.Addrs = append(a.Addrs, r.string())
		}
		if n > MaxAckAddrs {
			r.fail()
		}
	}
	if r.err == nil && len(r.p) > 0 {
		r.err = ErrWire
	}
	return name, a, r.err
}

func versionError(v byte) error {
	return fmt.Errorf("%w %d (this region speaks %d to %d)", ErrWireVersion, v, MinWireVersion, WireVersion)
}

// ErrAckVersion: a batch of version 2 had entries this region refused,
// which a version 2 acknowledgement cannot name.
var ErrAckVersion = errors.New("region: entries refused (--region-max-keys reached, or another window for a key), which a version 2 batch cannot be told of: the batch is not acknowledged; upgrade that region")

// SpokenVersion reads, from the error a region answered a batch with, the
// newest wire version it speaks if it refused the batch's version: a
// region then sends it batches of that version. It reports 0 otherwise.
func SpokenVersion(msg string) byte {
	_, rest, ok := strings.Cut(msg, ErrWireVersion.Error())
	if !ok {
		return 0
	}
	_, rest, ok = strings.Cut(rest, "speaks ")
	if !ok {
		return 0
	}
	if _, hi, ok := strings.Cut(rest, " to "); ok {
		rest = hi // "speaks 2 to 3)"
	}
	v, err := strconv.Atoi(strings.TrimSuffix(rest, ")"))
	if err != nil || v < MinWireVersion || v >= WireVersion {
		return 0
	}
	return byte(v)
}

// MaxSlots bounds a slot number in Batch.Gained: a cluster's slots are 0
// to MaxSlots−1.
const MaxSlots = 1 << 14

// appendSlots appends ascending slots as runs: how many runs, then each
// run's gap from the end of the one before and its length.
func appendSlots(dst []byte, slots []int) []byte {
	runs := 0
	for i := range slots {
		if i == 0 || slots[i] != slots[i-1]+1 {
			runs++
		}
	}
	dst = binary.AppendUvarint(dst, uint64(runs))
	next := 0 // the least slot the next run may start at
	for i := 0; i < len(slots); {
		j := i + 1
		for j < len(slots) && slots[j] == slots[j-1]+1 {
			j++
		}
		dst = binary.AppendUvarint(dst, uint64(slots[i]-next))
		dst = binary.AppendUvarint(dst, uint64(j-i))
		next = slots[j-1] + 1
		i = j
	}
	return dst
}

// slots reads appendSlots' encoding.
func (r *reader) slots() []int {
	runs := r.uvarint()
	var out []int
	next := uint64(0)
	for i := uint64(0); i < runs && r.err == nil; i++ {
		start := next + r.uvarint()
		n := r.uvarint()
		if r.err != nil || start < next || n == 0 || n > MaxSlots || start+n > MaxSlots {
			r.fail()
			return nil
		}
		for s := start; s < start+n; s++ {
			out = append(out, int(s))
		}
		next = start + n
	}
	return out
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
