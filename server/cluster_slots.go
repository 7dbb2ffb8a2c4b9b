package server

import (
	"slices"
	"strconv"

	"github.com/rlstore/rlstore/cluster"
)

// slotsReply is CLUSTER SLOTS' reply for one table, encoded once: clients
// ask for it on every connect and on every redirect, and a table changes
// only with the membership.
type slotsReply struct {
	table *cluster.Table
	resp2 []byte
}

// slotsReplyFor returns v's CLUSTER SLOTS reply, from the cache while the
// table is the one it was made for.
func (cn *clusterNode) slotsReplyFor(v *cluster.View) *slotsReply {
	if r := cn.slots.Load(); r != nil && r.table == v.Table {
		return r
	}
	r := &slotsReply{table: v.Table, resp2: appendClusterSlots(nil, v.Table)}
	cn.slots.Store(r)
	return r
}

// appendClusterSlots appends CLUSTER SLOTS' reply for t, in slot order:
// [start, end, [host, port, id]] per range.
func appendClusterSlots(b []byte, t *cluster.Table) []byte {
	type row struct {
		r cluster.Range
		n int
	}
	var rows []row
	entries := make([][]byte, len(t.Nodes())) // each node's [host, port, id], encoded once
	for i, n := range t.Nodes() {
		host, port := splitAddr(n.Addr)
		e := appendHeader(nil, '*', 3)
		e = appendInt(appendBulk(e, host), port)
		entries[i] = appendBulk(e, nodeID(n.Name))
		for _, r := range t.Ranges(n.Name) {
			rows = append(rows, row{r, i})
		}
	}
	slices.SortFunc(rows, func(a, b row) int { return a.r.From - b.r.From })
	b = appendHeader(b, '*', len(rows))
	for _, rw := range rows {
		b = appendHeader(b, '*', 3)
		b = appendInt(appendInt(b, rw.r.From), rw.r.To)
		b = append(b, entries[rw.n]...)
	}
	return b
}

func appendHeader(b []byte, kind byte, n int) []byte {
	b = strconv.AppendInt(append(b, kind), int64(n), 10)
	return append(b, '\r', '\n')
}

func appendInt(b []byte, n int) []byte { return appendHeader(b, ':', n) }

func appendBulk(b []byte, s string) []byte {
	b = appendHeader(b, '$', len(s))
	return append(append(b, s...), '\r', '\n')
}
