//go:build !unix

package persistence

import (
	"errors"
	"fmt"
	"os"
)

// ErrLocked is returned when another process has the data directory open.
var ErrLocked = errors.New("persistence: data directory in use by another process")

// lockFile opens path. Without flock the directory is not protected.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	return f, nil
}
