package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlstore/rlstore/internal/testport"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// regionTLSArgs returns the TLS flags of a region whose links are mutual
// TLS, with a node certificate signed by ca (see tlsFlags).
func regionTLSArgs(t *testing.T, ca *testCA, serial int64, tlsPort string) []string {
	return tlsFlags(t, ca, serial, tlsPort)
}

// TestRegionProcessTLS: with --tls-cluster yes two regions exchange over
// mutual TLS, to the --tls-port each --region-peers entry names, and share
// one limit. A region that dials eu in plain text (to its --port, with the
// secret) is refused, and so is one whose certificate comes from another CA.
func TestRegionProcessTLS(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	ports, tlsPorts := []string{testport.Stable(t), testport.Stable(t)}, []string{testport.Stable(t), testport.Stable(t)}
	region := func(name, peer string, extra ...string) *proc {
		args := []string{"--port", ports[0], "--region", name, "--region-peers", peer, "--cluster-secret", "region tls test", "--region-sync", "50ms"}
		if name == "us" {
			args[1] = ports[1]
		}
		return startProc(t, nil, append(args, extra...)...)
	}
	eu := region("eu", "us=127.0.0.1:"+tlsPorts[1], regionTLSArgs(t, ca, 10, tlsPorts[0])...)
	us := region("us", "eu=127.0.0.1:"+tlsPorts[0], regionTLSArgs(t, ca, 11, tlsPorts[1])...)
	eu.WaitLog(t, regexp.MustCompile(`region sync up.*region=us`))
	us.WaitLog(t, regexp.MustCompile(`region sync up.*region=eu`))
	ce, cu := newClient(t, eu.Addr(t)), newClient(t, us.Addr(t))
	ctx, until, win := context.Background(), time.Now().Add(2*deadline), unturnedWindow()
	waitUntil := func(cond func(info string) bool) string {
		for {
			info, err := ce.Info(ctx, "regions").Result()
			require.NoError(t, err)
			if cond(info) || time.Now().After(until) {
				return info
			}
		}
	}
	waitInfo := func(want string) string {
		return waitUntil(func(info string) bool { return strings.Contains(info, want) })
	}
	assert.Contains(t, waitInfo("rl_region_recovered:1"), "rl_region_recovered:1")
	admitted := 0
	for admitted < 3 && time.Now().Before(until) {
		v, err := ce.Do(ctx, "RL.FIXED", "api:1", 100, win).Int64Slice()
		require.NoError(t, err)
		admitted += int(v[0])
	}
	inf := ""
	for !strings.Contains(inf, "eu=3,us=0") && time.Now().Before(until) {
		v, err := cu.Do(ctx, "RL.INFO", "api:1").Result()
		if errors.Is(err, redis.Nil) {
			continue // us has not received eu's batch yet: it holds no such key
		}
		require.NoError(t, err)
		inf = fmt.Sprint(v)
	}
	assert.Contains(t, inf, "eu=3,us=0", "us counts eu's units")
	assert.Contains(t, waitInfo("name=us,addr=127.0.0.1:"+tlsPorts[1]+",state=up"), ",state=up", "eu's units reached us over TLS")
	us.Kill()

	plain := region("us", "eu=127.0.0.1:"+ports[0])
	plain.WaitLog(t, regexp.MustCompile(`region sync failed.*region=eu.*plain-text connection: this region takes batches over TLS only`))
	refused := func(info string) bool { return !strings.Contains(info, "rl_region_refused:0\r\n") }
	assert.True(t, refused(waitUntil(refused)), "eu counts the refusals")
	plain.Kill()

	stranger := region("us", "eu=127.0.0.1:"+tlsPorts[0], regionTLSArgs(t, other, 12, tlsPorts[1])...)
	stranger.WaitLog(t, regexp.MustCompile(`region sync failed.*region=eu.*certificate`))
	eu.WaitLog(t, regexp.MustCompile(`region sync failed.*region=us.*certificate`))
	assert.NotRegexp(t, regexp.MustCompile(`region sync up.*region=eu`), stranger.Log.String())
}
