// Package loadtest drives a RESP server from outside with rate-limit workloads and measures throughput, latency, memory and decision accuracy.
package loadtest
