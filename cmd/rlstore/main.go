// Command rlstore runs the rate-limit store: a server that speaks the Redis
// protocol. Run it with --help for its options.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	var gc gcBudget
	go tuneGC(context.Background(), 100*time.Millisecond, os.LookupEnv, &gc) // lives as long as the process
	os.Exit(runTuned(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr, sigs, &gc))
}
