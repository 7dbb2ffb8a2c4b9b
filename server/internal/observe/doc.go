// Package observe keeps what the server shows of the commands it runs: the
// slow log, the latency monitor's spikes and MONITOR's lines.
package observe
