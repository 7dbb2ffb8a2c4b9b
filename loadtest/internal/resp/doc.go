// Package resp is the load generator's RESP client: pipelined connections to loopback only, reply parsing without allocation, and command templates.
package resp
