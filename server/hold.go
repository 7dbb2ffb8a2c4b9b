package server

import (
	"io"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/tidwall/redcon"
)

// holdConn is a client's connection that can hold its replies back. Under
// appendfsync always a batch's replies are held from its first write
// command until the commit: the connection sends whatever the handlers wrote
// once the batch ends, so a reply could not be taken back once its commit had failed.
// Held, each write command's reply is replaced by -MISCONF if the commit
// fails, and every other reply goes out as written, in order. It is used only
// by the client's own goroutine.
type holdConn struct {
	clientConn
	w       *redcon.Writer // the held replies
	holding bool
	writes  []span // the held replies of write commands
}

// span is a range of the held bytes.
type span struct{ start, end int }

func newHoldConn(conn clientConn) *holdConn {
	return &holdConn{clientConn: conn, w: redcon.NewWriter(io.Discard)}
}

// hold starts holding replies, if it has not yet, and returns where the
// next reply will start in the held bytes.
func (h *holdConn) hold() int {
	h.holding = true
	return len(h.w.Buffer())
}

// markWrite records that the held bytes from start on are a write command's reply.
func (h *holdConn) markWrite(start int) {
	h.writes = append(h.writes, span{start, len(h.w.Buffer())})
}

// since returns the bytes held from start on.
func (h *holdConn) since(start int) []byte { return h.w.Buffer()[start:] }

// cut drops the bytes held from start on.
func (h *holdConn) cut(start int) { h.w.SetBuffer(h.w.Buffer()[:start]) }

// release sends what is held and stops holding. If refuse is not "", every
// write command's reply is replaced by the error refuse.
func (h *holdConn) release(refuse string) {
	if !h.holding {
		return
	}
	b := h.w.Buffer()
	if refuse == "" {
		h.clientConn.WriteRaw(b)
	} else {
		at := 0
		for _, sp := range h.writes {
			h.clientConn.WriteRaw(b[at:sp.start])
			h.clientConn.WriteError(refuse)
			at = sp.end
		}
		h.clientConn.WriteRaw(b[at:])
	}
	if cap(b) > 64<<10 {
		b = nil // a large batch's buffer is not worth keeping
	}
	h.w.SetBuffer(b[:0])
	h.writes = h.writes[:0]
	h.holding = false
}

// out is where a reply goes: the held bytes while holding, else the client.
func (h *holdConn) out() resp.Writer {
	if h.holding {
		return h.w
	}
	return h.clientConn
}

func (h *holdConn) WriteError(msg string)       { h.out().WriteError(msg) }
func (h *holdConn) WriteString(str string)      { h.out().WriteString(str) }
func (h *holdConn) WriteBulk(bulk []byte)       { h.out().WriteBulk(bulk) }
func (h *holdConn) WriteBulkString(bulk string) { h.out().WriteBulkString(bulk) }
func (h *holdConn) WriteInt(num int)            { h.out().WriteInt(num) }
func (h *holdConn) WriteInt64(num int64)        { h.out().WriteInt64(num) }
func (h *holdConn) WriteUint64(num uint64)      { h.out().WriteUint64(num) }
func (h *holdConn) WriteArray(count int)        { h.out().WriteArray(count) }
func (h *holdConn) WriteNull()                  { h.out().WriteNull() }
func (h *holdConn) WriteRaw(data []byte)        { h.out().WriteRaw(data) }
func (h *holdConn) WriteAny(v any)              { h.out().WriteAny(v) }

// later reserves the place of the reply to the command c is running; see
// resp.Later. Under appendfsync always the replies before it may be held
// until the batch's commit (see runWrite): the batch so far is committed
// first, so that they go out ahead of the Later's.
func (s *Server) later(c *client) *resp.Later {
	if c.hold != nil && c.hold.holding {
		c.rc.SetBatchEnd(true) // commitBatch commits only at a batch's end
		s.commitBatch(c)
		c.rc.SetBatchEnd(false)
	}
	return c.rc.Later()
}
