//go:build unix

package persistence

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrLocked is returned when another process has the data directory open.
var ErrLocked = errors.New("persistence: data directory in use by another process")

// lockFile takes an exclusive lock on path, which two processes sharing a data
// directory would otherwise corrupt. Closing the file releases it.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, fmt.Errorf("persistence: locking %s: %w", path, err)
	}
	return f, nil
}
