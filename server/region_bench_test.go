package server

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rlstore/rlstore/server/internal/decide"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/server/internal/global"
	"github.com/rlstore/rlstore/window"
)

// ackingPeer stands in for another region: it acknowledges every batch at
// once, so that the escrow never binds.
type ackingPeer struct{ bytes, keys atomic.Int64 }

func (a *ackingPeer) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	_, b, err := region.ReadBatch(cmds[0][2])
	if err != nil {
		return nil, err
	}
	a.bytes.Add(int64(len(cmds[0][2])))
	a.keys.Add(int64(len(b.Entries)))
	ack := region.AppendAck(nil, region.WireVersion, "us", &region.Ack{Seq: b.Seq, SentAt: b.SentAt, RecvAt: b.SentAt})
	return [][]byte{append(append([]byte("$"+strconv.Itoa(len(ack))+"\r\n"), ack...), "\r\n"...)}, nil
}

func (a *ackingPeer) Send(string, uint64, []byte, int, cluster.Replier) {}

// BenchmarkRegionDecide compares a decision on a global key with one on a
// local key (--region-local) of the same server, through the decision
// seam, side by side: the goal is at most 1.3× a local key's CPU.
// Every decision must be admitted: a region denies every global key until
// the others have echoed what they counted of it (echoedBy), and a
// benchmark of those denials measured a shortcut, not a decision.
func BenchmarkRegionDecide(b *testing.B) {
	rc := &RegionConfig{Name: "eu", Peers: []RegionPeer{{Name: "us", Addr: "127.0.0.1:1"}}, Secret: []byte("s"),
		Forwarder: &ackingPeer{}, Local: []string{"local:*"}}
	s := newTestServer(b, Config{Region: rc})
	b.Cleanup(func() { _ = s.Close() })
	echoedBy(s.reg, "us")
	for _, keys := range []int{1, 1000} {
		for _, kind := range []window.Kind{window.KindFixed, window.KindSlide} {
			for _, prefix := range []string{"local:", "global:"} {
				names := make([][]byte, keys)
				for i := range names {
					names[i] = []byte(prefix + kind.String() + ":" + strconv.Itoa(i))
				}
				b.Run(kind.String()+"/keys="+strconv.Itoa(keys)+"/"+prefix[:len(prefix)-1], func(b *testing.B) {
					b.ReportAllocs()
					var n atomic.Int64
					cpu0 := processCPU()
					b.RunParallel(func(pb *testing.PB) {
						i := int(n.Add(1))
						for pb.Next() {
							i++
							r := decide.Request{Op: decide.OpNative, Params: window.Params{Kind: kind, Limit: 1 << 31, Period: time.Minute},
								Cost: 1, Now: time.Now().UnixNano()}
							if o, err := s.dec.Decide(names[i%keys], &r); err != nil || !o.D.Allowed {
								b.Fatal("denied: a benchmark of denials measures nothing", err) // a region denies until it has recovered
							}
						}
					})
					b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				})
			}
		}
	}
}

// echoedBy makes rn take peer's batch echoing nothing of it back, as a
// peer that has counted nothing of this region does: until every other
// region has echoed, a region denies every key for a window (Recovering).
// It sends the batch as a peer would, through RL.PEER REGION's receiver.
func echoedBy(rn *global.Node, peer string) {
	rc := rn.Model()
	b := &region.Batch{Seq: 1, SentAt: rc.Epoch, Epoch: 1, EchoFor: []int64{rc.Epoch}, Echo: []region.Entry{}}
	if _, refusal := rn.Receive(region.AppendBatch(nil, rc.Header(peer), b), false); refusal != "" {
		panic(refusal)
	}
}
