// Package hist is a log-linear latency histogram with bounded relative error.
package hist
