package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGCPercent(t *testing.T) {
	for _, tc := range []struct {
		live uint64
		want int
	}{
		{0, 100},
		{1 << 20, 100},       // small heap: the default headroom
		{16 << 20, 25},       // 4 MiB over 16 MiB live
		{64 << 20, 6},        // 4 MiB over 64 MiB live
		{1 << 30, 5},         // never below the floor
		{^uint64(0) >> 8, 5}, // huge live heaps do not overflow
	} {
		assert.Equal(t, tc.want, gcPercent(tc.live), "gcPercent(%d)", tc.live)
	}
}

func TestTuneGCLeavesOperatorsGOGC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		tuneGC(ctx, time.Hour, func(k string) (string, bool) { return "50", k == "GOGC" })
		close(done)
	}()
	<-done // returns at once rather than running the loop
}
