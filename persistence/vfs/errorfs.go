package vfs

import (
	"os"
	"sync"
)

// Op is a kind of file operation ErrorFS can fail.
type Op uint8

// The operations ErrorFS can fail. OpWrite and OpSync are a File's; the rest an FS's.
const (
	OpOpen Op = iota
	OpWrite
	OpSync
	OpTruncate
	OpClose
	OpRename
	OpRemove
	OpMkdir
	OpReadDir
	OpStat
)

var opNames = [...]string{"open", "write", "sync", "truncate", "close", "rename", "remove", "mkdir", "readdir", "stat"}

func (o Op) String() string { return opNames[o] }

// Injector decides whether an operation on path fails, and with what error
// (nil: it goes ahead). A write that fails writes nothing.
type Injector func(op Op, path string) error

// ErrorFS is an FS that asks its injector before every operation, in the
// spirit of pebble's errorfs: tests use it to fail a given write, fsync or
// rename deterministically, with no mount. The zero injector fails nothing.
// It is safe for concurrent use.
type ErrorFS struct {
	FS FS // the file system underneath

	mu     sync.Mutex // guards inject and counts
	inject Injector
	counts [len(opNames)]int
	open   int // files open
}

// NewErrorFS returns an ErrorFS over fs that fails nothing until Inject is called.
func NewErrorFS(fs FS) *ErrorFS { return &ErrorFS{FS: fs} }

// Inject sets the injector; nil fails nothing.
func (e *ErrorFS) Inject(f Injector) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inject = f
}

// Count returns how many times op has been attempted, failed or not.
func (e *ErrorFS) Count(op Op) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.counts[op]
}

func (e *ErrorFS) check(op Op, path string) error {
	e.mu.Lock()
	e.counts[op]++
	f := e.inject
	e.mu.Unlock()
	if f == nil {
		return nil
	}
	if err := f(op, path); err != nil {
		return &os.PathError{Op: op.String(), Path: path, Err: err}
	}
	return nil
}

// OpenFile opens name.
func (e *ErrorFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := e.check(OpOpen, name); err != nil {
		return nil, err
	}
	f, err := e.FS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.open++
	e.mu.Unlock()
	return &errorFile{File: f, fs: e}, nil
}

// Remove removes name.
func (e *ErrorFS) Remove(name string) error {
	if err := e.check(OpRemove, name); err != nil {
		return err
	}
	return e.FS.Remove(name)
}

// Rename renames oldpath to newpath. The injector sees newpath.
func (e *ErrorFS) Rename(oldpath, newpath string) error {
	if err := e.check(OpRename, newpath); err != nil {
		return err
	}
	return e.FS.Rename(oldpath, newpath)
}

// MkdirAll makes dir and its parents.
func (e *ErrorFS) MkdirAll(dir string, perm os.FileMode) error {
	if err := e.check(OpMkdir, dir); err != nil {
		return err
	}
	return e.FS.MkdirAll(dir, perm)
}

// ReadDir lists dir.
func (e *ErrorFS) ReadDir(dir string) ([]string, error) {
	if err := e.check(OpReadDir, dir); err != nil {
		return nil, err
	}
	return e.FS.ReadDir(dir)
}

// Stat stats name.
func (e *ErrorFS) Stat(name string) (os.FileInfo, error) {
	if err := e.check(OpStat, name); err != nil {
		return nil, err
	}
	return e.FS.Stat(name)
}

type errorFile struct {
	File
	fs     *ErrorFS
	closed bool
}

func (f *errorFile) Write(p []byte) (int, error) {
	if err := f.fs.check(OpWrite, f.Name()); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *errorFile) Sync() error {
	if err := f.fs.check(OpSync, f.Name()); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f *errorFile) Truncate(size int64) error {
	if err := f.fs.check(OpTruncate, f.Name()); err != nil {
		return err
	}
	return f.File.Truncate(size)
}

// OpenFiles returns how many files opened through e are not yet closed.
func (e *ErrorFS) OpenFiles() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.open
}

// Close always closes the file underneath, as a failed close(2) does.
func (f *errorFile) Close() error {
	err := f.fs.check(OpClose, f.Name())
	if !f.closed {
		f.closed = true
		f.fs.mu.Lock()
		f.fs.open--
		f.fs.mu.Unlock()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}
