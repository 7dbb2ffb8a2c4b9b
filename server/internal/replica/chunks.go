package replica

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/policy"
)

// A shipment is a run of RL.PEER COPY commands, each carrying one chunk of
// encoded entries. A chunk is built in place behind room left for its RESP
// header, so sealing it writes the header into that room and a shipment
// goes out without being copied into a command first.
const (
	// shipChunk bounds a chunk, well under --max-request-bytes' default
	// (1 MiB), which a backup refuses a longer command beyond, and small
	// enough that a backup's read buffer for it is reused, not regrown.
	shipChunk = 256 << 10
	// shipWindow is how many chunks are in flight to a backup at once.
	shipWindow = 4
	// copyHead is the room for a chunk's RESP header: the longer of
	// copyPrefix and deltaPrefix, the payload's length, up to ten digits,
	// and "\r\n".
	copyHead = len(deltaPrefix) + 10 + 2
)

// copyPrefix starts every RL.PEER COPY command, up to its payload's length,
// and deltaPrefix every RL.PEER DELTA command, for a backup that takes
// deltas (persistence.AppendDeltaChunks).
const (
	copyPrefix  = cluster.PeerCopyHead
	deltaPrefix = cluster.PeerDeltaHead
)

// fresh returns an empty chunk: copyHead bytes of room for its header.
func (p *shipPeer) fresh() []byte {
	var b []byte
	select {
	case b = <-p.free:
	default:
		b = make([]byte, 0, shipChunk+shipChunk/4)
	}
	return append(b[:0], make([]byte, copyHead)...)
}

// recycle keeps chunk's buffer for a later chunk, if there is room.
func (p *shipPeer) recycle(chunk []byte) {
	if cap(chunk) > 2*shipChunk {
		return // one huge entry's: not worth keeping
	}
	select {
	case p.free <- chunk:
	default:
	}
}

// seal writes chunk's RESP header, the command prefix's, into its room and
// its trailing "\r\n", and returns the whole command: the chunk's bytes
// from the header on.
func seal(chunk []byte, prefix string) []byte {
	n := len(chunk) - copyHead
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	start := copyHead - len(prefix) - len(digits) - 2
	i := start + copy(chunk[start:], prefix)
	i += copy(chunk[i:], digits)
	copy(chunk[i:], "\r\n")
	return append(chunk, '\r', '\n')[start:]
}

// sendChunks ships chunks to node, shipWindow of them in flight at once,
// as RL.PEER DELTA if deltas, else COPY, and returns the payload bytes the
// backup acknowledged. It stops at the first failure. Every chunk's buffer
// is recycled.
func (p *shipPeer) sendChunks(node cluster.Node, chunks [][]byte, deltas bool) (int64, error) {
	prefix := copyPrefix
	if deltas {
		prefix = deltaPrefix
	}
	var sent int64
	var err error
	for len(chunks) > 0 && err == nil {
		n := min(len(chunks), shipWindow)
		err = p.sendWindow(node, chunks[:n], prefix)
		for _, c := range chunks[:n] {
			if err == nil {
				sent += int64(len(c) - copyHead)
			}
			p.recycle(c)
		}
		chunks = chunks[n:]
	}
	for _, c := range chunks {
		p.recycle(c)
	}
	return sent, err
}

// sendWindow sends each chunk as its own batch on the backup's stream and
// waits for every reply.
func (p *shipPeer) sendWindow(node cluster.Node, chunks [][]byte, prefix string) error {
	ch := make(chan error, len(chunks))
	for _, c := range chunks {
		if len(c) == copyHead {
			ch <- nil // empty: nothing to say
			continue
		}
		p.r.cfg.Ship.Send(node.Addr, 0, seal(c, prefix), 1, chunkReplier{ch, p})
	}
	var first error
	for range chunks {
		if err := <-ch; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// chunkReplier hands a chunk's outcome to sendWindow, and the keys whose
// deltas the backup could not complete, which RL.PEER DELTA names in an
// array, to the peer.
type chunkReplier struct {
	ch chan error
	p  *shipPeer
}

func (r chunkReplier) Replies(reps [][]byte, err error) {
	if err == nil && len(reps) != 1 {
		err = errors.New("backup sent no reply")
	}
	if err == nil {
		err = refusal(reps)
	}
	if err == nil && len(reps[0]) > 0 && reps[0][0] == '*' {
		var keys [][]byte
		if keys, err = bulkArray(reps[0]); err == nil {
			r.p.missedDeltas(keys)
		}
	}
	r.ch <- err
}

// bulkArray parses a RESP array of bulk strings, whole.
func bulkArray(b []byte) ([][]byte, error) {
	bad := errors.New("backup sent a malformed reply")
	n, b, ok := respLength(b, '*')
	if !ok || n < 0 || n > int64(len(b)) {
		return nil, bad
	}
	out := make([][]byte, 0, n)
	for range n {
		var k int64
		if k, b, ok = respLength(b, '$'); !ok || k < 0 || int64(len(b)) < k+2 {
			return nil, bad
		}
		out, b = append(out, b[:k:k]), b[k+2:]
	}
	return out, nil
}

// respLength reads a RESP length line of type c at the start of b, and
// returns it and what follows it.
func respLength(b []byte, c byte) (int64, []byte, bool) {
	i := bytes.Index(b, []byte("\r\n"))
	if len(b) < 1 || b[0] != c || i < 2 {
		return 0, nil, false
	}
	n, ok := policy.ParseInt(b[1:i])
	return n, b[i+2:], ok
}
