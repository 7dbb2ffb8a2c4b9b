package persistence

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ErrDirGone is the failure of a data directory deleted while the Store uses it.
var ErrDirGone = errors.New("persistence: the data directory was deleted while in use")

// Err returns why changes cannot be made durable now, or nil if they can: a
// log write or fsync that failed, or a data directory that was deleted. The
// server refuses changes while it is not nil. It clears by itself once a
// snapshot has started a fresh log, which the Store retries every few seconds.
func (st *Store) Err() error {
	if p := st.dirErr.Load(); p != nil {
		return *p
	}
	return st.log.broken()
}

// ErrnoText returns the text of the system error inside err, as C's strerror
// words it ("No space left on device"), or err's own text if there is none.
// Redis's -MISCONF reply carries this text.
func ErrnoText(err error) string {
	var errno syscall.Errno
	switch {
	case errors.Is(err, ErrDirGone):
		return "the data directory was deleted"
	case !errors.As(err, &errno):
		return err.Error()
	}
	s := errno.Error()
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// logChange is the log's onChange: one line for each change of failure
// state, rather than one per failed request; Stats counts the failures between.
func (st *Store) logChange(err error) {
	if err != nil {
		st.failingSince.Store(st.now())
		st.opts.Logger.Error("the append-only log cannot be written: refusing changes (-MISCONF) until a snapshot succeeds",
			"dir", st.dir, "err", err)
		return
	}
	since := st.failingSince.Swap(0)
	st.opts.Logger.Warn("the append-only log is written again: accepting changes",
		"dir", st.dir, "failed_for", time.Duration(st.now()-since).Round(time.Millisecond), "failed_writes", st.log.errors.Load())
}

// setDirErr records the data directory's state, logging a change of it.
func (st *Store) setDirErr(err error) {
	var was *error
	if err != nil {
		was = st.dirErr.Swap(&err)
	} else {
		was = st.dirErr.Swap(nil)
	}
	switch {
	case was == nil && err != nil:
		st.opts.Logger.Error("the data directory is gone: refusing changes (-MISCONF) while it is recreated with a fresh snapshot",
			"dir", st.dir, "err", err)
	case was != nil && err == nil:
		st.opts.Logger.Warn("the data directory is back: accepting changes", "dir", st.dir)
	}
}

// checkDir returns ErrDirGone if the data directory, or the newest log
// segment in it, has been deleted. Writes to a deleted file still succeed,
// so only this notices that nothing written would survive a restart.
func (st *Store) checkDir() error {
	if _, err := st.fs.Stat(st.dir); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrDirGone, st.dir, err)
	}
	if path, gone := st.log.newestUnlinked(); gone {
		return fmt.Errorf("%w: %s was deleted", ErrDirGone, path)
	}
	return nil
}

// recreateDir makes the data directory again and locks it, before a
// snapshot fills it. If another process has taken the directory since, it
// stays refused.
func (st *Store) recreateDir() error {
	if err := st.fs.MkdirAll(st.dir, 0o700); err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	lock, err := lockFile(filepath.Join(st.dir, lockName))
	if err != nil {
		return err
	}
	st.lock.Close()
	st.lock = lock
	if st.opts.DirRecreated != nil {
		st.opts.DirRecreated()
	}
	return nil
}

// newestUnlinked reports whether the newest segment's file has no name left.
func (l *aof) newestUnlinked() (string, bool) {
	l.flushMu.Lock() // seg.f is closed under it
	defer l.flushMu.Unlock()
	l.mu.Lock()
	seg := l.segs[len(l.segs)-1]
	l.mu.Unlock()
	if seg.f == nil {
		return "", false
	}
	fi, err := seg.f.Stat()
	if err != nil {
		return "", false
	}
	n, ok := linkCount(fi)
	return seg.path, ok && n == 0
}
