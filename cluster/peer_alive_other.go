//go:build !unix

package cluster

import "syscall"

// peerClosed is not known here: a closed idle connection fails its next batch.
func peerClosed(syscall.RawConn) bool { return false }
