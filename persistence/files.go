package persistence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/rlstore/rlstore/persistence/vfs"
)

// File names in a data directory. A snapshot and the log segment started with
// it share a generation; a snapshot is followed on load by every segment of its
// generation or later.
const (
	snapPrefix, snapSuffix = "snap-", ".rls"
	logPrefix, logSuffix   = "log-", ".rla"
	tmpSuffix              = ".tmp"
	lockName               = "LOCK"
	policiesName           = "policies.rlp"
	policiesLockName       = "policies.lock"
)

func snapName(gen uint64) string { return fmt.Sprintf("%s%016x%s", snapPrefix, gen, snapSuffix) }
func logName(gen uint64) string  { return fmt.Sprintf("%s%016x%s", logPrefix, gen, logSuffix) }

// generations returns the generations of the files in names named prefix<gen>suffix, ascending.
func generations(names []string, prefix, suffix string) []uint64 {
	var gens []uint64
	for _, n := range names {
		hex, ok := strings.CutPrefix(n, prefix)
		if hex, ok2 := strings.CutSuffix(hex, suffix); ok && ok2 && len(hex) == 16 {
			if g, err := strconv.ParseUint(hex, 16, 64); err == nil {
				gens = append(gens, g)
			}
		}
	}
	slices.Sort(gens)
	return gens
}

// listDir returns the names in dir.
func listDir(fsys vfs.FS, dir string) ([]string, error) {
	names, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	return names, nil
}

// syncDir fsyncs a directory, making the names created, renamed or removed in it durable.
func syncDir(fsys vfs.FS, dir string) error {
	d, err := fsys.OpenFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("persistence: fsync %s: %w", dir, err)
	}
	return nil
}

// writeAtomic writes a file with write into a temp file, fsyncs it, renames it
// to path and fsyncs the directory, so path holds either the old or the whole
// new contents after a crash. It returns the bytes written. t, if not nil,
// times the file's fsync.
func writeAtomic(fsys vfs.FS, path string, t *fsyncTimer, write func(f vfs.File) error) (int64, error) {
	tmp := path + tmpSuffix
	f, err := fsys.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, fmt.Errorf("persistence: %w", err)
	}
	err = write(f)
	if err == nil {
		err = t.sync(f)
	}
	var size int64
	if err == nil {
		var st os.FileInfo
		st, err = f.Stat()
		if st != nil {
			size = st.Size()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = fsys.Rename(tmp, path)
	}
	if err != nil {
		_ = fsys.Remove(tmp) // best effort: a start removes what is left
		return 0, fmt.Errorf("persistence: writing %s: %w", path, err)
	}
	return size, syncDir(fsys, filepath.Dir(path))
}

// removeTemps deletes the snapshot temp files a crash left in dir. (The
// policy store's temp file is its own: it may be being written right now.)
func removeTemps(fsys vfs.FS, dir string, names []string) error {
	for _, n := range names {
		if strings.HasPrefix(n, snapPrefix) && strings.HasSuffix(n, snapSuffix+tmpSuffix) {
			if err := fsys.Remove(filepath.Join(dir, n)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("persistence: %w", err)
			}
		}
	}
	return nil
}

// truncateTorn cuts a file back to its valid part and makes that durable.
func truncateTorn(fsys vfs.FS, path string, size int64) error {
	f, err := fsys.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("persistence: truncating %s: %w", path, err)
	}
	return nil
}
