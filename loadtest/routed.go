package loadtest

import (
	"context"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// router is what a cluster-aware client adds to a worker: a connection to
// every node and the slot map, so that each request goes straight to its
// key's owner. It sends in one of two ways (Config.ClusterSplit):
//   - per node (the default), as a client that batches per node does
//     (ioredis's auto-pipelining, redis-benchmark --cluster): keys wait in
//     a queue per node, and a node's -P keys go to it as one pipeline once
//     its queue has them;
//   - split, as go-redis ClusterClient sends a pipeline: each batch of -P
//     keys is split per node, written to every node, then each node's
//     replies are read in order, so each node sees about -P / nodes.
type router struct {
	slots *slotMap
	conns []*resp.Client // by node, as slots.addrs
	bufs  [][]byte       // a batch's requests, by node
	keys  [][]uint64     // split: a batch's key numbers; per node: the keys queued; by node, in order
}

// dialRouted dials one connection per node for each of n workers.
func dialRouted(ctx context.Context, sm *slotMap, n int) ([]*router, error) {
	out := make([]*router, 0, n)
	for range n {
		r := &router{slots: sm, bufs: make([][]byte, len(sm.addrs)), keys: make([][]uint64, len(sm.addrs))}
		for _, addr := range sm.addrs {
			cl, err := resp.Dial(ctx, addr)
			if err != nil {
				r.close()
				closeRouters(out)
				return nil, err
			}
			r.conns = append(r.conns, cl)
		}
		out = append(out, r)
	}
	return out, nil
}

func (r *router) close() {
	for _, cl := range r.conns {
		_ = cl.Close()
	}
}

func closeRouters(rs []*router) {
	for _, r := range rs {
		r.close()
	}
}

// ownerOf returns the node that owns key number k.
func (w *worker) ownerOf(k uint64) int {
	w.key = w.keys.AppendKey(w.key[:0], k)
	return int(w.route.slots.owner[keySlot(w.key)])
}

// batchRouted is batchClosed for a cluster-aware client that splits its
// pipeline per node.
func (w *worker) batchRouted(n int) error {
	r := w.route
	for i := range r.bufs {
		r.bufs[i], r.keys[i] = r.bufs[i][:0], r.keys[i][:0]
	}
	for range n {
		k := w.pick()
		node := w.ownerOf(k)
		r.bufs[node] = w.tmpl.Append(r.bufs[node], w.key)
		r.keys[node] = append(r.keys[node], k)
	}
	sent := time.Now()
	for i, cl := range r.conns {
		if len(r.keys[i]) == 0 {
			continue
		}
		if err := cl.Write(r.bufs[i]); err != nil {
			w.lose(r.keys[i], sent)
			return err
		}
	}
	for i, cl := range r.conns {
		for j, k := range r.keys[i] {
			if err := cl.Read(&w.rep); err != nil {
				w.lose(r.keys[i][j:], sent)
				return err
			}
			w.record(k, sent, sent, time.Now(), w.wl.classify(&w.rep))
		}
	}
	return nil
}

// runPerNode is runClosed for a cluster-aware client that batches per
// node: it draws keys, each into its owner's queue, until a queue holds a
// pipeline's worth, and sends that node those keys as one pipeline. Every
// key drawn is sent, so the keys follow the run's distribution; once the
// run is over, what is left in the queues is sent too.
func (w *worker) runPerNode(b *budget) error {
	r := w.route
	for {
		node := r.fullQueue(w.depth)
		if node < 0 {
			n := b.claim(w.depth, time.Now())
			if n == 0 {
				break
			}
			for range n {
				k := w.pick()
				node := w.ownerOf(k)
				r.keys[node] = append(r.keys[node], k)
			}
			continue
		}
		if err := w.sendQueued(node, w.depth); err != nil {
			return err
		}
		w.publish()
	}
	for node := range r.keys {
		for len(r.keys[node]) > 0 {
			if err := w.sendQueued(node, min(w.depth, len(r.keys[node]))); err != nil {
				return err
			}
		}
	}
	w.publish()
	return nil
}

// fullQueue returns a node whose queue holds at least depth keys, or -1.
func (r *router) fullQueue(depth int) int {
	for i, q := range r.keys {
		if len(q) >= depth {
			return i
		}
	}
	return -1
}

// sendQueued sends the first n keys queued for node as one pipeline and
// reads their replies.
func (w *worker) sendQueued(node, n int) error {
	r := w.route
	keys := r.keys[node][:n]
	w.buf = w.buf[:0]
	for _, k := range keys {
		w.encode(k)
	}
	sent := time.Now()
	cl := r.conns[node]
	if err := cl.Write(w.buf); err != nil {
		w.lose(keys, sent)
		return err
	}
	for i, k := range keys {
		if err := cl.Read(&w.rep); err != nil {
			w.lose(keys[i:], sent)
			return err
		}
		w.record(k, sent, sent, time.Now(), w.wl.classify(&w.rep))
	}
	r.keys[node] = append(r.keys[node][:0], r.keys[node][n:]...)
	return nil
}
