//go:build unix

package persistence

import (
	"os"
	"syscall"
)

// linkCount returns the number of names fi's file has, if the system says.
func linkCount(fi os.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true //nolint:unconvert // Nlink is uint32 on some systems
}
