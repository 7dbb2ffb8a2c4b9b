package server

import (
	"errors"
	"strconv"

	"github.com/rlstore/rlstore/cluster"
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
	// copyHead is the room for a chunk's RESP header: copyPrefix and the
	// payload's length, up to ten digits, and "\r\n".
	copyHead = len(copyPrefix) + 10 + 2
)

// copyPrefix starts every RL.PEER COPY command, up to its payload's length.
const copyPrefix = "*3\r\n$7\r\nRL.PEER\r\n$4\r\nCOPY\r\n$"

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

// seal writes chunk's RESP header into its room and its trailing "\r\n",
// and returns the whole command: the chunk's bytes from the header on.
func seal(chunk []byte) []byte {
	n := len(chunk) - copyHead
	var num [20]byte
	digits := strconv.AppendInt(num[:0], int64(n), 10)
	start := copyHead - len(copyPrefix) - len(digits) - 2
	i := start + copy(chunk[start:], copyPrefix)
	i += copy(chunk[i:], digits)
	copy(chunk[i:], "\r\n")
	return append(chunk, '\r', '\n')[start:]
}

// sendChunks ships chunks to node, shipWindow of them in flight at once,
// and returns the payload bytes the backup acknowledged. It stops at the
// first failure. Every chunk's buffer is recycled.
func (p *shipPeer) sendChunks(node cluster.Node, chunks [][]byte) (int64, error) {
	var sent int64
	var err error
	for len(chunks) > 0 && err == nil {
		n := min(len(chunks), shipWindow)
		err = p.sendWindow(node, chunks[:n])
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
func (p *shipPeer) sendWindow(node cluster.Node, chunks [][]byte) error {
	ch := make(chan error, len(chunks))
	for _, c := range chunks {
		if len(c) == copyHead {
			ch <- nil // empty: nothing to say
			continue
		}
		p.r.cfg.Ship.Send(node.Addr, 0, seal(c), 1, chunkReplier(ch))
	}
	var first error
	for range chunks {
		if err := <-ch; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// chunkReplier hands a chunk's outcome to sendWindow.
type chunkReplier chan error

func (r chunkReplier) Replies(reps [][]byte, err error) {
	if err == nil && len(reps) != 1 {
		err = errors.New("backup sent no reply")
	}
	if err == nil {
		err = refusal(reps)
	}
	r <- err
}
