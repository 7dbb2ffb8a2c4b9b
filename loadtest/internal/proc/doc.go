// Package proc starts, stops and measures the servers under test: child processes, CPU time, memory, perf profiles and the machine's description.
package proc
