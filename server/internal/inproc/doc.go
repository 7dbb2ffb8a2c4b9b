// Package inproc is the gRPC gateway's way into the server: it decides a
// batch (gateway/batch.Decider) by writing it as pipelined decision
// commands to a client of the server on an in-memory connection, and reads
// their replies, so a batch takes the path every RESP command takes.
package inproc
