package route

import (
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/rlstore/rlstore/server/internal/resp"
	"github.com/tidwall/redcon"
)

// remoteBatch is the requests of one client's batch for one owner, encoded
// as they go to it, and the places of their replies. It is the batch's
// cluster.Replier.
type remoteBatch struct {
	rt     *Router
	owner  cluster.Node
	buf    []byte // the requests, each wrapped in RL.HOP
	items  []fwdItem
	laters []*resp.Later // the places of their replies, by item
}

// fwdItem is one forwarded request of a batch.
type fwdItem struct {
	cm    *core.Command
	slot  int
	start int // where its request starts in buf
}

// maxPooledBatch is the largest request buffer a remoteBatch keeps when it
// goes back to the pool.
const maxPooledBatch = 64 << 10

// forwardLater queues a request for its owner, reserving its reply's place.
func (rt *Router) forwardLater(x *core.Session, c *Conn, cm *core.Command, args [][]byte, slot int, owner cluster.Node) {
	b := c.batchFor(owner.Name)
	if b == nil {
		b = rt.newBatch(owner)
		c.fwd = append(c.fwd, b)
	}
	start := len(b.buf)
	b.buf = appendHop(b.buf, x.Proto, args) // a copy: args point into the read buffer, which the next read reuses
	b.items = append(b.items, fwdItem{cm: cm, slot: slot, start: start})
	b.laters = append(b.laters, x.Conn.Later())
}

// batchFor returns the batch of this read batch's requests for owner, or
// nil. A batch has a few owners at most, and comparing their names costs
// less than hashing one: a map here was about 1% of a forwarding node's
// CPU (pprof, rlload -P 16 through a 3-node cluster).
func (c *Conn) batchFor(owner string) *remoteBatch {
	for _, b := range c.fwd {
		if b.owner.Name == owner {
			return b
		}
	}
	return nil
}

// appendHop appends args as a RESP command wrapped in RL.HOP 1 resp, the
// way a forwarded request reaches its owner.
func appendHop(b []byte, resp int, args [][]byte) []byte {
	b = redcon.AppendArray(b, len(args)+3)
	b = append(b, cluster.HopHead+"$1\r\n1\r\n$1\r\n"...)
	b = append(b, '0'+byte(resp), '\r', '\n')
	for _, a := range args {
		b = redcon.AppendBulk(b, a)
	}
	return b
}

// EndBatch sends the requests for other nodes that x's read batch queued
// (flushForwards), as the batch ends.
func (rt *Router) EndBatch(x *core.Session) { rt.flushForwards(x, rt.slot.Get(x)) }

// flushForwards sends the batch's queued requests, one batch per owner, at
// the end of the client's read batch. A client's batches for one owner
// share one node-to-node connection (its lane), so the owner runs them in
// the order the client sent them.
func (rt *Router) flushForwards(x *core.Session, c *Conn) {
	if len(c.fwd) == 0 {
		return
	}
	for i, b := range c.fwd {
		c.fwd[i] = nil
		n := int64(len(b.items))
		rt.forwarded.Add(n)
		rt.peer(b.owner.Name).forwarded.Add(n)
		rt.cfg.Forwarder.Send(b.owner.Addr, uint64(x.ID), b.buf, len(b.items), b)
	}
	c.fwd = c.fwd[:0]
}

// Replies implements cluster.Replier: each reply goes to its place. On a
// failure the requests are retried elsewhere, off the peer connection's
// reader, which must not wait.
func (b *remoteBatch) Replies(replies [][]byte, err error) {
	if err != nil {
		b.rt.peer(b.owner.Name).errors.Add(1)
		go b.retry(err)
		return
	}
	resp.FinishAll(b.laters, replies)
	b.rt.freeBatch(b)
}

// retry answers each request of a batch whose owner failed.
func (b *remoteBatch) retry(err error) {
	w := &restartWindow{until: time.Now().Add(restartWait)} // one for the batch: its requests are retried in turn
	for i := range b.items {
		b.laters[i].Finish(b.rt.retryElsewhere(b, i, err, w))
	}
	b.rt.freeBatch(b)
}

// newBatch takes a remoteBatch for owner from the pool: a batch per client
// read batch and owner would otherwise be a few allocations each.
func (rt *Router) newBatch(owner cluster.Node) *remoteBatch {
	if b, ok := rt.batches.Get().(*remoteBatch); ok {
		b.rt, b.owner = rt, owner
		return b
	}
	return &remoteBatch{rt: rt, owner: owner, buf: make([]byte, 0, 512), items: make([]fwdItem, 0, 16), laters: make([]*resp.Later, 0, 16)}
}

// freeBatch returns a batch whose replies are all finished to the pool.
// Its Laters are no longer its own: the connection reuses them once written.
func (rt *Router) freeBatch(b *remoteBatch) {
	if cap(b.buf) > maxPooledBatch {
		return
	}
	clear(b.items)
	clear(b.laters)
	b.buf, b.items, b.laters, b.owner = b.buf[:0], b.items[:0], b.laters[:0], cluster.Node{}
	rt.batches.Put(b)
}

// retryElsewhere sends one request of a batch whose owner failed to the
// slot's owner now, if that changed (the owner has just left, say): to
// this node too, through its own RESP port, since this goroutine cannot
// run a command on the client's connection. A request the old owner ran
// before its connection broke is then charged twice: for a rate limiter,
// the safe side.
//
// An owner that refused the connection, or closed it, may be restarting
// at once (kill -9 and a supervisor): while the table still names it, the
// request goes to it again within w (restartWait after the failure: see
// restartWindow), so that a quick restart fails no request of the other
// nodes' clients.
func (rt *Router) retryElsewhere(b *remoteBatch, i int, err error, w *restartWindow) []byte {
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		owner := rt.ho.View().Table.Owner(b.items[i].slot)
		same := owner.Name == b.owner.Name
		if same && !(restarting(err) && time.Now().Add(pause).Before(w.until)) {
			break
		}
		if same {
			time.Sleep(pause) // a backoff while the owner's process starts
		}
		reps, err2 := rt.forwardRaw(owner, b.request(i))
		if err2 == nil {
			return reps[0]
		}
		if !same {
			break
		}
		err = err2
		w.note(err)
	}
	return rt.unreachableReply(b.items[i].cm, b.owner, err)
}

// restartWindow is how long a request goes on asking an owner that looks
// restarted: until, restartWait after the first failure. A try that found
// the owner's port bound but the process not answering yet (a new
// connection it answered nothing on: cluster.ErrNoAnswerYet) spent up to
// --cluster-timeout waiting on a process that is there, so it opens the
// window once more, from then: under -race on a loaded host a restarted
// node took about a second from binding its port to serving, and the
// request gave up in between.
type restartWindow struct {
	until    time.Time
	extended bool
}

func (w *restartWindow) note(err error) {
	if !w.extended && errors.Is(err, cluster.ErrNoAnswerYet) {
		w.until, w.extended = time.Now().Add(restartWait), true
	}
}

// restartWait bounds how long a request waits for an owner that refuses
// connections to come back. A process restarted at once listens again
// well within it; one that does not is declared dead within failure
// detection, and its slots' new owners serve them.
const restartWait = time.Second

// restarting reports whether err says the peer's process is not there
// (refused, reset, closed), or not serving yet (it answered nothing on a
// new connection: a restarted process binds its port before it serves),
// rather than slow: a timeout on a connection that answered already waited.
func restarting(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, cluster.ErrNoAnswerYet)
}

// request is the i-th request's bytes.
func (b *remoteBatch) request(i int) []byte {
	if i+1 < len(b.items) {
		return b.buf[b.items[i].start:b.items[i+1].start]
	}
	return b.buf[b.items[i].start:]
}

// forwardRaw sends one request, encoded, to owner and waits for its
// reply; Send bounds the wait by the forward's timeout.
func (rt *Router) forwardRaw(owner cluster.Node, req []byte) ([][]byte, error) {
	rt.forwarded.Add(1)
	ps := rt.peer(owner.Name)
	ps.forwarded.Add(1)
	w := &replyWait{done: make(chan struct{})}
	rt.cfg.Forwarder.Send(owner.Addr, 0, req, 1, w)
	<-w.done
	ps.note(w.err)
	return w.replies, w.err
}

// replyWait is a cluster.Replier that a goroutine waits on.
type replyWait struct {
	replies [][]byte
	err     error
	done    chan struct{}
}

func (w *replyWait) Replies(replies [][]byte, err error) {
	w.replies, w.err = replies, err
	close(w.done)
}
