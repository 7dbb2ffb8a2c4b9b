package loadtest

import (
	"context"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/resp"
)

// router is what a cluster-aware client adds to a worker: a connection to
// every node and the slot map, so that each request goes straight to its
// key's owner, as go-redis ClusterClient sends a pipeline: split per node,
// written to every node, then each node's replies read in order.
type router struct {
	slots *slotMap
	conns []*resp.Client // by node, as slots.addrs
	bufs  [][]byte       // a batch's requests, by node
	keys  [][]uint64     // a batch's key numbers, by node, in order
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

// batchRouted is batchClosed for a cluster-aware client.
func (w *worker) batchRouted(n int) error {
	r := w.route
	for i := range r.bufs {
		r.bufs[i], r.keys[i] = r.bufs[i][:0], r.keys[i][:0]
	}
	for range n {
		k := w.pick()
		w.key = w.keys.AppendKey(w.key[:0], k)
		node := r.slots.owner[keySlot(w.key)]
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
