package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/cluster"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// These tests attack a cluster from outside as issue 25 found it could be:
// each failed on the cluster as it was before the handshake's version 2.

const trustACL = "user default off\nuser admin on >adminpw ~* +@all\n"

func writeSecret(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

// adminClient logs in as the ACL file's admin.
func adminClient(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Username: "admin", Password: "adminpw", MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// rawPeer is a plain connection that speaks RESP line by line.
type rawPeer struct {
	net.Conn
	r *bufio.Reader
}

func dialPeer(t *testing.T, addr string) *rawPeer {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(deadline)))
	t.Cleanup(func() { _ = c.Close() })
	return &rawPeer{Conn: c, r: bufio.NewReader(c)}
}

// do sends args and returns the reply's first line, and a bulk string's body.
func (p *rawPeer) do(t *testing.T, args ...string) string {
	t.Helper()
	p.send(t, args...)
	return p.reply(t)
}

func (p *rawPeer) send(t *testing.T, args ...string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := p.Write([]byte(b.String()))
	require.NoError(t, err)
}

func (p *rawPeer) reply(t *testing.T) string {
	t.Helper()
	l, err := p.r.ReadString('\n')
	require.NoError(t, err)
	l = strings.TrimSuffix(l, "\r\n")
	if strings.HasPrefix(l, "$") && l != "$-1" {
		body, err := p.r.ReadString('\n')
		require.NoError(t, err)
		return strings.TrimSuffix(body, "\r\n")
	}
	return l
}

func (p *rawPeer) closed() bool {
	_, err := p.r.ReadByte()
	return err != nil
}

// TestTrustProcessACLFileAloneCannotWipe is finding 1: with --aclfile and
// no other secret, a cluster had an empty peer secret, and an
// unauthenticated client could become a peer and wipe every counter. Now
// such a node refuses to start; with a secret, the old attack gets nowhere.
func TestTrustProcessACLFileAloneCannotWipe(t *testing.T) {
	acl := writeSecret(t, "users.acl", trustACL)
	p := startProc(t, nil, "--port", "0", "--cluster-addr", "127.0.0.1:0", "--aclfile", acl)
	assert.Equal(t, 2, p.ExitCode(t), "an ACL file alone is no cluster secret")
	assert.Contains(t, p.Log.String(), "--cluster-secret")

	secret := writeSecret(t, "secret", "a long random cluster secret\n")
	ps := []*clusterProc{startClusterProc(t, "p0", "", "--aclfile", acl, "--cluster-secret-file", secret)}
	for i := 1; i < 3; i++ {
		ps = append(ps, startClusterProc(t, fmt.Sprint("p", i), ps[0].gossip, "--aclfile", acl, "--cluster-secret-file", secret))
	}
	admin := adminClient(t, ps[0].addr)
	require.Eventually(t, func() bool {
		info, err := admin.ClusterInfo(context.Background()).Result()
		return err == nil && strings.Contains(info, "cluster_size:3\r\n")
	}, deadline, 20*time.Millisecond)
	keys := make([]string, 30)
	for i := range keys {
		keys[i] = fmt.Sprint("full:", i)
		rep, err := admin.Do(context.Background(), "RL.SLIDE", keys[i], 50, 3600, "COST", 50).Int64Slice()
		require.NoError(t, err)
		require.Equal(t, int64(1), rep[0])
	}
	for _, n := range ps {
		c := dialPeer(t, n.addr)
		assert.True(t, strings.HasPrefix(c.do(t, "RL.PEER", "HELLO", "evil"), "-NOPERM unsupported peer handshake version"))
		c = dialPeer(t, n.addr)
		ch := cluster.Challenge{Name: "evil", DialerNonce: cluster.NewNonce()}
		ch.ServerNonce = c.do(t, "RL.PEER", "HELLO", cluster.HandshakeVersion, ch.Name, ch.DialerNonce)
		assert.Equal(t, "-NOPERM bad cluster credentials", c.do(t, "RL.PEER", "AUTH", ch.DialerMAC(cluster.PeerKey(nil))))
		assert.True(t, c.closed())
		c = dialPeer(t, n.addr)
		assert.Equal(t, "-NOPERM this command is for cluster peers only", c.do(t, "RL.PEER", "SYNC", strings.Repeat("\xff", 2048)))
		assert.Equal(t, "-NOPERM this command is for cluster peers only", c.do(t, "RL.PEER", "IMPORT", "p0", "reset", "0-16383", ""))
		assert.True(t, strings.HasPrefix(c.do(t, "RL.HOP", "1", "2", "FLUSHALL"), "-NOAUTH"))
	}
	for _, k := range keys {
		rep, err := admin.Do(context.Background(), "RL.SLIDE", k, 50, 3600, "PEEK").Int64Slice()
		require.NoError(t, err)
		assert.Equal(t, int64(0), rep[2], "%s is still at its limit", k)
	}
}

var readyLine = regexp.MustCompile(`ready to accept connections`)

// TestTrustProcessPeerAuthIsNoOracle is finding 2: with --requirepass and
// no key, one connection could try 20,000 handshake proofs, uncounted, and
// the handshake got in while AUTH was locked out. Now a connection gets
// one try, tries count toward the guard, and a locked-out address cannot
// use the handshake.
func TestTrustProcessPeerAuthIsNoOracle(t *testing.T) {
	n := startClusterProc(t, "p0", "", "--requirepass", "pw", "--auth-fail-limit", "2", "--auth-fail-window", "30")
	n.WaitLog(t, readyLine)
	c := dialPeer(t, n.addr)
	ch := cluster.Challenge{Name: "evil", DialerNonce: cluster.NewNonce()}
	ch.ServerNonce = c.do(t, "RL.PEER", "HELLO", cluster.HandshakeVersion, ch.Name, ch.DialerNonce)
	var batch strings.Builder
	for i := range 20000 {
		mac := ch.DialerMAC(cluster.PeerKey(fmt.Append(nil, "guess", i)))
		fmt.Fprintf(&batch, "*3\r\n$7\r\nRL.PEER\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n", len(mac), mac)
	}
	go func() { _, _ = c.Write([]byte(batch.String())) }() // the server stops reading: do not wait for it
	assert.Equal(t, "-NOPERM bad cluster credentials", c.reply(t))
	assert.True(t, c.closed(), "one try, then the connection is closed")

	c = dialPeer(t, n.addr)
	ch = cluster.Challenge{Name: "evil", DialerNonce: cluster.NewNonce()}
	ch.ServerNonce = c.do(t, "RL.PEER", "HELLO", cluster.HandshakeVersion, ch.Name, ch.DialerNonce)
	assert.Equal(t, "-NOPERM bad cluster credentials", c.do(t, "RL.PEER", "AUTH", strings.Repeat("0", 64)))
	c = dialPeer(t, n.addr)
	assert.True(t, strings.HasPrefix(c.do(t, "RL.PEER", "HELLO", cluster.HandshakeVersion, "evil", cluster.NewNonce()),
		"-WRONGPASS too many wrong passwords"), "two wrong tries use the handshake's allowance")

	for i := range 6 { // the address's whole allowance, over six users
		c := dialPeer(t, n.addr)
		c.do(t, "AUTH", fmt.Sprint("user", i), "guess")
	}
	right := cluster.NewPeers(cluster.PeersConfig{Name: "p1", Secret: cluster.PasswordSecret("pw")})
	defer right.Close()
	_, err := right.Forward(context.Background(), n.addr, [][][]byte{{[]byte("PING")}})
	require.Error(t, err, "the right secret from a locked-out address is refused unchecked")
	assert.Contains(t, err.Error(), "too many wrong passwords")
	c = dialPeer(t, n.addr)
	assert.True(t, strings.HasPrefix(c.do(t, "AUTH", "pw"), "-WRONGPASS too many wrong passwords"))
}

// peakRSS is the most memory the process has held resident, from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the peak RSS is read from Linux's /proc")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			var kb int64
			_, err := fmt.Sscan(f[1], &kb)
			require.NoError(t, err)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/pid/status")
	return 0
}

// TestTrustProcessRepliesStayBounded is finding 5: 200 connections set
// 200 KB library names, then 10 connections each sent CLIENT LIST three
// times without reading, and the server's RSS reached 939 MB. Now names
// are capped at 1 KB and all clients' replies share --maxmemory-clients:
// the same attack, with the longest names allowed, keeps the peak RSS
// under 300 MB, and another client is served throughout.
func TestTrustProcessRepliesStayBounded(t *testing.T) {
	p := startProc(t, nil, "--port", "0")
	addr := p.Addr(t)
	huge, most := strings.Repeat("x", 200<<10), strings.Repeat("y", 1024)
	for i := range 200 {
		c := dialPeer(t, addr)
		assert.True(t, strings.HasPrefix(c.do(t, "CLIENT", "SETINFO", "LIB-NAME", huge), "-ERR"), "a 200 KB name is refused")
		require.Equal(t, "+OK", c.do(t, "CLIENT", "SETINFO", "LIB-NAME", most), "connection %d", i)
		require.Equal(t, "+OK", c.do(t, "CLIENT", "SETNAME", most))
	}
	var list strings.Builder
	for range 3 {
		list.WriteString("*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n")
	}
	for range 10 {
		c := dialPeer(t, addr)
		_, err := c.Write([]byte(list.String())) // and never read
		require.NoError(t, err)
	}
	other := newClient(t, addr)
	for range 100 {
		require.NoError(t, other.Ping(context.Background()).Err(), "another client is served")
	}
	rss := peakRSS(t, p.Cmd.Process.Pid)
	t.Logf("peak RSS %d MB", rss>>20)
	assert.Less(t, rss, int64(300<<20))
}

// TestTrustProcessACLUsersAcrossNodes is finding 3 with child processes:
// with an ACL file, 210 of 300 keys failed through node 1 with -NOPERM for
// 'rl.hop', since the owner checked the node-to-node connection's user.
// Now every key works for admin through one node, and a user limited to
// ~api:* is limited the same whichever node owns the key.
func TestTrustProcessACLUsersAcrossNodes(t *testing.T) {
	acl := writeSecret(t, "users.acl", trustACL+"user api on >apipw ~api:* +rl.slide\n")
	secret := writeSecret(t, "secret", "another long random cluster secret\n")
	ps := []*clusterProc{startClusterProc(t, "p0", "", "--aclfile", acl, "--cluster-secret-file", secret)}
	for i := 1; i < 3; i++ {
		ps = append(ps, startClusterProc(t, fmt.Sprint("p", i), ps[0].gossip, "--aclfile", acl, "--cluster-secret-file", secret))
	}
	admin := adminClient(t, ps[0].addr)
	require.Eventually(t, func() bool {
		info, err := admin.ClusterInfo(context.Background()).Result()
		return err == nil && strings.Contains(info, "cluster_size:3\r\n")
	}, deadline, 20*time.Millisecond)
	for _, p := range ps {
		waitHandedOverAs(t, p, adminClient(t, p.addr))
	}
	api := redis.NewClient(&redis.Options{Addr: ps[0].addr, Username: "api", Password: "apipw", MaxRetries: -1})
	t.Cleanup(func() { _ = api.Close() })
	ctx := context.Background()
	owners := map[string]int{}
	for i := range 300 {
		k := fmt.Sprint("api:", i)
		require.NoError(t, admin.Do(ctx, "RL.SLIDE", "web:"+k, 5, 60).Err(), "admin, key %d", i)
		require.NoError(t, api.Do(ctx, "RL.SLIDE", k, 5, 60).Err(), "api on its own keys, key %d", i)
		err := api.Do(ctx, "RL.SLIDE", "web:"+k, 5, 60).Err()
		require.EqualError(t, err, "NOPERM this user has no permissions to access one of the keys used as arguments")
		rep, err := admin.Do(ctx, "RL.CLUSTER", "OWNER", k).Result()
		require.NoError(t, err)
		owners[fmt.Sprint(rep.(map[any]any)["owner"])]++
	}
	assert.Len(t, owners, 3, "the keys span every node: %v", owners)
}

// waitHandedOverAs is waitHandedOver for a node whose clients log in.
func waitHandedOverAs(t *testing.T, p *clusterProc, c *redis.Client) {
	t.Helper()
	require.Eventually(t, func() bool { return settled(t, c) }, deadline, 10*time.Millisecond, "%s ends its handoffs", p.name)
}
