//go:build !unix

package persistence

import "os"

// linkCount is unknown without a unix stat.
func linkCount(os.FileInfo) (uint64, bool) { return 0, false }
