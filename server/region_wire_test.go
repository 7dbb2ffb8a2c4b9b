package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rlstore/rlstore/cluster"
	"github.com/rlstore/rlstore/region"
	"github.com/rlstore/rlstore/window"
)

// TestRegionMaxKeys: keys only eu decided are held in us up to
// --region-max-keys (10), no more: the others' entries are refused, eu
// hears of it, and us's table stays bounded however many keys eu spreads.
func TestRegionMaxKeys(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(name string, rc *RegionConfig) {
		if name == "us" {
			rc.MaxKeys = 10
		}
	})
	eu, us := rs[0], rs[1]
	eventually(t, "both regions to have echoed", func() bool {
		return infoField(regionInfo(t, eu), "rl_region_recovered") == "1" && infoField(regionInfo(t, us), "rl_region_recovered") == "1"
	})
	for i := range 50 {
		require.NoError(t, eu.rdb.Do(context.Background(), "RL.FIXED", "spread:"+strconv.Itoa(i), 100, 60).Err())
	}
	eventually(t, "us to refuse the keys past its 10", func() bool {
		inf := regionInfo(t, eu)
		n, _ := strconv.Atoi(infoField(inf, "rl_region_refused_by_peers"))
		return n >= 40
	})
	inf := regionInfo(t, us)
	assert.Equal(t, "10", infoField(inf, "rl_region_max_keys"))
	assert.Equal(t, "10", infoField(inf, "rl_region_remote_keys"))
	assert.Equal(t, "10", infoField(inf, "rl_region_keys"), "us's table")
	n, _ := strconv.Atoi(infoField(inf, "rl_region_keys_refused"))
	assert.GreaterOrEqual(t, n, 40)
	assert.NotEqual(t, "0", infoField(regionInfo(t, eu), "rl_region_unacked_units"), "eu's units us refused are not acknowledged")

	// us deciding a key itself needs no room among the keys held for eu.
	v, err := us.rdb.Do(context.Background(), "RL.FIXED", "spread:49", 100, 60).Slice()
	require.NoError(t, err)
	assert.Equal(t, int64(1), v[0])
}

// oldRegion stands in for a region of wire version 2: it refuses a batch
// of another version as that version did, and acknowledges the others in
// version 2.
type oldRegion struct{ refusedV3, acked atomic.Int64 }

func (o *oldRegion) Forward(_ context.Context, _ string, cmds [][][]byte) ([][]byte, error) {
	p := cmds[0][2]
	if p[0] != 2 {
		o.refusedV3.Add(1)
		return [][]byte{fmt.Appendf(nil, "-ERR region sync refused: region: unsupported sync version %d (this region speaks 2)\r\n", p[0])}, nil
	}
	_, b, err := region.ReadBatch(p)
	if err != nil {
		return nil, err
	}
	o.acked.Add(1)
	ack := region.AppendAck(nil, 2, "us", &region.Ack{Seq: b.Seq, SentAt: b.SentAt, RecvAt: b.SentAt, Epoch: b.Epoch})
	return [][]byte{append(append([]byte("$"+strconv.Itoa(len(ack))+"\r\n"), ack...), "\r\n"...)}, nil
}

func (o *oldRegion) Send(string, uint64, []byte, int, cluster.Replier) {}

// TestRegionOldPeer: a region of wire version 2 refuses this one's
// version 3 batch; this one then sends it version 2, which it
// acknowledges.
func TestRegionOldPeer(t *testing.T) {
	old := &oldRegion{}
	rc := &RegionConfig{Name: "eu", Peers: []RegionPeer{{Name: "us", Addr: "127.0.0.1:1"}}, Secret: []byte("s"),
		Forwarder: old, Sync: 10 * time.Millisecond}
	s := newTestServer(t, Config{Region: rc})
	serveTest(t, s)
	eventually(t, "version 2 batches acknowledged", func() bool { return old.acked.Load() >= 3 })
	assert.Equal(t, int64(1), old.refusedV3.Load(), "one refusal, then version 2")
	assert.Contains(t, regionField(s, "rl_region0"), "state=up")
}

// TestRegionAnswersOldBatches: a version 2 batch is acknowledged in
// version 2, unless this region refuses one of its entries, which version
// 2 cannot say: then the batch is refused whole, in words the old region
// logs. A batch of an earlier start of its sender is refused too (it made
// the command panic and closed the connection).
func TestRegionAnswersOldBatches(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(name string, rc *RegionConfig) {
		if name == "us" {
			rc.MaxKeys = 1
		}
	})
	us := rs[1]
	fw := cluster.NewPeers(cluster.PeersConfig{Name: "eu", Secret: []byte("region test secret"), Conns: 1, Timeout: time.Second})
	t.Cleanup(fw.Close)
	h := region.Defaults(0, 2).Header("eu")
	lim := region.Limit{Kind: window.KindFixed, Limit: 100, Window: time.Minute}
	bucket := time.Now().UnixNano() / int64(time.Minute)
	send := func(v byte, epoch int64, keys ...string) (string, error) {
		b := &region.Batch{Seq: 1, SentAt: time.Now().UnixNano(), Epoch: epoch}
		for _, k := range keys {
			b.Entries = append(b.Entries, region.Entry{Key: k, Limit: lim, Bucket: bucket, Count: 1})
		}
		h.Version = v
		reps, err := fw.Forward(context.Background(), us.addr, [][][]byte{{[]byte(cluster.PeerCommand), []byte(cluster.PeerRegion), region.AppendBatch(nil, h, b)}})
		if err != nil {
			return "", err
		}
		return string(reps[0]), nil
	}
	epoch := time.Now().UnixNano() + int64(time.Hour) // newer than the real eu's
	rep, err := send(2, epoch, "old:1")
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(rep, "$"), rep)
	body, err := bulkOf(rep)
	require.NoError(t, err)
	assert.Equal(t, byte(2), body[0], "answered in version 2")
	_, ack, err := region.ReadAck(body)
	require.NoError(t, err)
	assert.Empty(t, ack.Refused)

	rep, err = send(2, epoch, "old:2", "old:3")
	require.NoError(t, err)
	assert.Contains(t, rep, "-ERR region sync refused: region: entries refused (--region-max-keys reached")
	rep, err = send(3, epoch, "old:2", "old:3")
	require.NoError(t, err)
	body, err = bulkOf(rep)
	require.NoError(t, err)
	_, ack, err = region.ReadAck(body)
	require.NoError(t, err)
	assert.Equal(t, []int{0, 1}, ack.Refused)

	rep, err = send(3, epoch-1)
	require.NoError(t, err)
	assert.Equal(t, "-ERR region sync refused: a batch of an earlier start of that region, or of an unknown one\r\n", rep)
}

// bulkOf returns a raw RESP reply's bulk string.
func bulkOf(rep string) ([]byte, error) {
	_, body, ok := strings.Cut(rep, "\r\n")
	if !strings.HasPrefix(rep, "$") || !ok || !strings.HasSuffix(body, "\r\n") {
		return nil, errors.New("not a bulk string: " + rep)
	}
	return []byte(strings.TrimSuffix(body, "\r\n")), nil
}

// regionField returns field of s's INFO regions.
func regionField(s *Server, field string) string {
	for _, p := range s.infoRegions() {
		if p.Key == field {
			return fmt.Sprint(p.Val)
		}
	}
	return ""
}
