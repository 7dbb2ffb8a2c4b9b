package durable

import (
	"io"

	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/tidwall/redcon"
)

// Conn is the connection a Hold wraps: where replies go, and how a batch
// is read (the server's clientConn; *resp.Conn is one).
type Conn interface {
	resp.Writer
	Close() error
	PeekPipeline() [][]byte
	ReadPipeline() [][]byte
}

// Hold is a client's connection that can hold its replies back. Under
// appendfsync always a batch's replies are held from its first write
// command until the commit: the connection sends whatever the handlers wrote
// once the batch ends, so a reply could not be taken back once its commit had failed.
// Held, each write command's reply is replaced by -MISCONF if the commit
// fails, and every other reply goes out as written, in order. It is used only
// by the client's own goroutine.
type Hold struct {
	Conn
	w       *redcon.Writer // the held replies
	holding bool
	writes  []span // the held replies of write commands
}

// span is a range of the held bytes.
type span struct{ start, end int }

func newHold(conn Conn) *Hold {
	return &Hold{Conn: conn, w: redcon.NewWriter(io.Discard)}
}

// hold starts holding replies, if it has not yet, and returns where the
// next reply will start in the held bytes.
func (h *Hold) hold() int {
	h.holding = true
	return len(h.w.Buffer())
}

// markWrite records that the held bytes from start on are a write command's reply.
func (h *Hold) markWrite(start int) {
	h.writes = append(h.writes, span{start, len(h.w.Buffer())})
}

// since returns the bytes held from start on.
func (h *Hold) since(start int) []byte { return h.w.Buffer()[start:] }

// cut drops the bytes held from start on.
func (h *Hold) cut(start int) { h.w.SetBuffer(h.w.Buffer()[:start]) }

// release sends what is held and stops holding. If refuse is not "", every
// write command's reply is replaced by the error refuse.
func (h *Hold) release(refuse string) {
	if !h.holding {
		return
	}
	b := h.w.Buffer()
	if refuse == "" {
		h.Conn.WriteRaw(b)
	} else {
		at := 0
		for _, sp := range h.writes {
			h.Conn.WriteRaw(b[at:sp.start])
			h.Conn.WriteError(refuse)
			at = sp.end
		}
		h.Conn.WriteRaw(b[at:])
	}
	if cap(b) > 64<<10 {
		b = nil // a large batch's buffer is not worth keeping
	}
	h.w.SetBuffer(b[:0])
	h.writes = h.writes[:0]
	h.holding = false
}

// out is where a reply goes: the held bytes while holding, else the client.
func (h *Hold) out() resp.Writer {
	if h.holding {
		return h.w
	}
	return h.Conn
}

func (h *Hold) WriteError(msg string)       { h.out().WriteError(msg) }
func (h *Hold) WriteString(str string)      { h.out().WriteString(str) }
func (h *Hold) WriteBulk(bulk []byte)       { h.out().WriteBulk(bulk) }
func (h *Hold) WriteBulkString(bulk string) { h.out().WriteBulkString(bulk) }
func (h *Hold) WriteInt(num int)            { h.out().WriteInt(num) }
func (h *Hold) WriteInt64(num int64)        { h.out().WriteInt64(num) }
func (h *Hold) WriteUint64(num uint64)      { h.out().WriteUint64(num) }
func (h *Hold) WriteArray(count int)        { h.out().WriteArray(count) }
func (h *Hold) WriteNull()                  { h.out().WriteNull() }
func (h *Hold) WriteRaw(data []byte)        { h.out().WriteRaw(data) }
func (h *Hold) WriteAny(v any)              { h.out().WriteAny(v) }
