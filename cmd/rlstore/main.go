// Command rlstore runs the rate-limit store: a server that speaks the Redis
// protocol. Run it with --help for its options.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	os.Exit(run(os.Args[1:], os.LookupEnv, os.Stdout, os.Stderr, sigs))
}
