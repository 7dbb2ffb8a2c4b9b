package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"strings"

	"github.com/rlstore/rlstore/loadtest/internal/proc"
)

// systemFlags say where the two servers come from: a binary to start or an
// address to use.
type systemFlags struct {
	rlstoreBin, rlstoreAddr, rlstoreArgs string
	redisBin, redisAddr                  string
	serverLogs                           bool
}

func (f *systemFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.rlstoreBin, "rlstore-bin", "", "start rlstore from this binary with --port 0 (the address is read from its log)")
	fs.StringVar(&f.rlstoreAddr, "rlstore-addr", "", "use the rlstore at this loopback address")
	fs.StringVar(&f.rlstoreArgs, "rlstore-args", "", "extra flags for a started rlstore, space-separated")
	fs.StringVar(&f.redisBin, "redis-bin", "", "start Redis from this binary (default: redis-server on PATH)")
	fs.StringVar(&f.redisAddr, "redis-addr", "", "use the Redis at this loopback address")
	fs.BoolVar(&f.serverLogs, "server-logs", false, "pass started servers' logs through to stderr")
}

// open returns both systems; the caller closes them.
func (f *systemFlags) open(ctx context.Context, stderr io.Writer) (rl, redis *proc.System, err error) {
	logs := io.Discard
	if f.serverLogs {
		logs = stderr
	}
	if rl, err = f.rlstore(ctx, logs); err != nil {
		return nil, nil, err
	}
	if redis, err = f.redis(ctx, logs); err != nil {
		rl.Close()
		return nil, nil, err
	}
	return rl, redis, nil
}

func (f *systemFlags) rlstore(ctx context.Context, logs io.Writer) (*proc.System, error) {
	switch {
	case f.rlstoreAddr != "":
		return proc.AddrSystem("rlstore", f.rlstoreAddr), nil
	case f.rlstoreBin != "":
		extra := strings.Fields(f.rlstoreArgs)
		return proc.StartSystem(ctx, "rlstore", func(ctx context.Context) (*proc.Server, error) {
			return proc.StartRlstore(ctx, f.rlstoreBin, extra, logs)
		})
	}
	return nil, fmt.Errorf("give --rlstore-bin or --rlstore-addr")
}

func (f *systemFlags) redis(ctx context.Context, logs io.Writer) (*proc.System, error) {
	if f.redisAddr != "" {
		return proc.AddrSystem("redis", f.redisAddr), nil
	}
	bin := f.redisBin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			return nil, fmt.Errorf("redis-server is not installed: install it or give --redis-addr")
		}
	}
	f.redisBin = bin
	return proc.StartSystem(ctx, "redis", func(ctx context.Context) (*proc.Server, error) {
		return proc.StartRedis(ctx, bin, logs)
	})
}
