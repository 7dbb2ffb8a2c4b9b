package main

import (
	"os"
	"runtime/pprof"
)

// startProfile writes the load generator's own CPU profile to path, so that
// it can be shown not to be the bottleneck.
func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
