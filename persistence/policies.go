package persistence

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/rlstore/rlstore/persistence/vfs"
)

// The policy file is a header block, then one block per change: kindPut
// (uvarint name length, name, definition) or kindDelete (name). Each is
// fsynced before Put or Delete returns. When the file has grown to more than
// twice what its live policies need, it is rewritten crash-safely.

// MaxPolicyBytes bounds a policy's name plus definition.
const MaxPolicyBytes = 1 << 20

// compactMin is the size below which the policy file is never rewritten.
const compactMin = 64 << 10

// ErrPolicy is returned for a policy name or definition that cannot be stored.
var ErrPolicy = errors.New("persistence: policy name must be 1 byte or more, and name plus definition at most 1 MiB")

// Policies is the durable policy store: named definitions, each an opaque
// byte string the server encodes. Put and Delete return only once the change
// is fsynced, so a reply sent after them survives kill -9. Make it with
// OpenPolicies; it is safe for concurrent use.
type Policies struct {
	fs   vfs.FS
	dir  string
	path string
	lock *os.File

	mu   sync.Mutex // guards everything below
	f    vfs.File
	size int64             // bytes in the file
	live int64             // bytes the live policies would take in a rewritten file
	defs map[string][]byte // name → definition
	err  error             // a failed write or fsync: the file takes no more
}

// OpenPolicies opens (creating if needed) the policy file in dir. A torn last
// record is truncated and returned as a Warning for the caller to log; any
// other damage is a *CorruptError naming the file and offset.
func OpenPolicies(dir string) (*Policies, []Warning, error) {
	return OpenPoliciesFS(vfs.OS, dir)
}

// OpenPoliciesFS is OpenPolicies on the file system fsys.
func OpenPoliciesFS(fsys vfs.FS, dir string) (*Policies, []Warning, error) {
	if err := fsys.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("persistence: %w", err)
	}
	lock, err := lockFile(filepath.Join(dir, policiesLockName))
	if err != nil {
		return nil, nil, err
	}
	p := &Policies{fs: fsys, dir: dir, path: filepath.Join(dir, policiesName), lock: lock, defs: map[string][]byte{}}
	warns, err := p.load()
	if err == nil {
		err = p.reopen()
	}
	if err != nil {
		lock.Close()
		return nil, warns, err
	}
	return p, warns, nil
}

// load reads the policy file, creating it if absent and truncating a torn tail.
func (p *Policies) load() ([]Warning, error) {
	f, err := p.fs.OpenFile(p.path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, p.rewriteLocked()
	}
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("persistence: %w", err)
	}
	valid, warn, err := readPolicies(f, st.Size(), policiesName, p.defs)
	if err != nil {
		return nil, err
	}
	var warns []Warning
	if warn != nil {
		warns = append(warns, *warn)
	}
	if valid == 0 { // not even a header: start the file afresh
		return warns, p.rewriteLocked()
	}
	p.size, p.live = valid, p.liveBytes()
	if warn == nil {
		return nil, nil
	}
	return warns, truncateTorn(p.fs, p.path, valid)
}

// readPolicies reads a policy file into defs. It returns the size of the
// file's valid part; a torn last record is left out and reported in warn.
func readPolicies(r io.Reader, size int64, name string, defs map[string][]byte) (valid int64, warn *Warning, err error) {
	br := newBlockReader(r, size, name)
	for first := true; ; first = false {
		payload, err := br.next()
		var torn *tornError
		switch {
		case errors.Is(err, io.EOF):
			return br.off, nil, nil
		case errors.As(err, &torn):
			return torn.off, &Warning{File: name, Offset: torn.off, Dropped: size - torn.off, Reason: torn.reason}, nil
		case err != nil:
			return br.last, nil, err
		}
		if reason := applyPolicy(payload, first, defs); reason != "" {
			return br.last, nil, br.corrupt(br.last, reason)
		}
	}
}

// applyPolicy applies one block of a policy file to defs.
func applyPolicy(payload []byte, first bool, defs map[string][]byte) string {
	if first {
		_, reason := parseHeader(payload, magicPolicies)
		return reason
	}
	d := decoder{b: payload[1:]}
	switch payload[0] {
	case kindPut:
		name := d.bytes(int(min(d.uvarint(), MaxPolicyBytes)))
		if d.bad || len(name) == 0 {
			return "malformed policy record"
		}
		defs[string(name)] = slices.Clone(d.b)
	case kindDelete:
		if len(d.b) == 0 {
			return "malformed policy record"
		}
		delete(defs, string(d.b))
	default:
		return fmt.Sprintf("unexpected block kind %d", payload[0])
	}
	return ""
}

func appendPut(buf []byte, name string, def []byte) []byte {
	buf, start := beginBlock(buf, kindPut)
	buf = binary.AppendUvarint(buf, uint64(len(name)))
	buf = append(append(buf, name...), def...)
	return endBlock(buf, start)
}

func appendDelete(buf []byte, name string) []byte {
	buf, start := beginBlock(buf, kindDelete)
	return endBlock(append(buf, name...), start)
}

// putBytes is what a policy takes in a rewritten file.
func putBytes(name string, def []byte) int64 {
	return int64(len(appendPut(nil, name, def)))
}

func (p *Policies) liveBytes() int64 {
	n := int64(len(appendHeader(nil, magicPolicies, 0, 0)))
	for name, def := range p.defs {
		n += putBytes(name, def)
	}
	return n
}

// Put stores def under name, replacing any definition it had, and returns once
// the change is durable.
func (p *Policies) Put(name string, def []byte) error {
	if len(name) == 0 || len(name)+len(def) > MaxPolicyBytes {
		return ErrPolicy
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.repairLocked(); err != nil {
		return err
	}
	if err := p.appendLocked(appendPut(nil, name, def)); err != nil {
		return err
	}
	if old, ok := p.defs[name]; ok {
		p.live -= putBytes(name, old)
	}
	p.defs[name] = slices.Clone(def)
	p.live += putBytes(name, def)
	p.compactLocked()
	return nil
}

// Delete removes the policy name, reporting whether it existed, and returns
// once the change is durable.
func (p *Policies) Delete(name string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	def, ok := p.defs[name]
	if !ok {
		return false, p.err
	}
	if err := p.appendLocked(appendDelete(nil, name)); err != nil {
		return false, err
	}
	delete(p.defs, name)
	p.live -= putBytes(name, def)
	p.compactLocked()
	return true, nil
}

// Get returns the definition of the policy name. The bytes are the store's:
// do not modify them.
func (p *Policies) Get(name string) ([]byte, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	def, ok := p.defs[name]
	return def, ok
}

// List returns the policies' names, sorted.
func (p *Policies) List() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	names := make([]string, 0, len(p.defs))
	for name := range p.defs {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// appendLocked writes rec at the end of the file and fsyncs it. A failed
// write is cut off again, so the file never holds a half record before a
// whole one; if that fails too, or the fsync fails, the store takes no more.
func (p *Policies) appendLocked(rec []byte) error {
	if p.err != nil {
		return p.err
	}
	if _, err := p.f.Write(rec); err != nil {
		if terr := p.f.Truncate(p.size); terr != nil {
			p.err = fmt.Errorf("persistence: writing %s: %w", p.path, errors.Join(err, terr))
			return p.err
		}
		return fmt.Errorf("persistence: writing %s: %w", p.path, err)
	}
	if err := p.f.Sync(); err != nil {
		p.err = fmt.Errorf("persistence: fsync %s: %w", p.path, err)
		return p.err
	}
	p.size += int64(len(rec))
	return nil
}

// compactLocked rewrites the file once it is mostly dead records. A failed
// rewrite leaves the old file, which is still right, in place.
func (p *Policies) compactLocked() {
	if p.size < compactMin || p.size <= 2*p.live {
		return
	}
	if err := p.rewriteLocked(); err == nil {
		if err := p.reopen(); err != nil {
			p.err = err
		}
	}
}

// rewriteLocked writes the live policies to a new file: temp file, fsync,
// rename, fsync the directory.
func (p *Policies) rewriteLocked() error {
	buf := appendHeader(nil, magicPolicies, 0, 0)
	for _, name := range slices.Sorted(maps.Keys(p.defs)) {
		buf = appendPut(buf, name, p.defs[name])
	}
	_, err := writeAtomic(p.fs, p.path, nil, func(f vfs.File) error {
		_, err := f.Write(buf)
		return err
	})
	if err == nil {
		p.size, p.live = int64(len(buf)), int64(len(buf))
	}
	return err
}

// reopen opens the file, as it now stands, for appending.
func (p *Policies) reopen() error {
	f, err := p.fs.OpenFile(p.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	if p.f != nil {
		p.f.Close()
	}
	p.f = f
	return nil
}

// Close closes the store. Every Put and Delete that returned is already durable.
func (p *Policies) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.f == nil {
		return ErrClosed
	}
	err := p.f.Close()
	p.f, p.err = nil, ErrClosed
	return errors.Join(err, p.lock.Close())
}

// Repair rewrites the policy file, and takes its lock again, if the file
// was deleted while open (its data directory removed): every change written
// to a deleted file would be gone at the next start. The Store calls it
// through Options.DirRecreated, and Put before every change.
func (p *Policies) Repair() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.repairLocked()
}

func (p *Policies) repairLocked() error {
	if p.f == nil {
		return ErrClosed
	}
	fi, err := p.f.Stat()
	if err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	if n, ok := linkCount(fi); !ok || n > 0 {
		return nil
	}
	if err := p.fs.MkdirAll(p.dir, 0o700); err != nil {
		return fmt.Errorf("persistence: %w", err)
	}
	lock, err := lockFile(filepath.Join(p.dir, policiesLockName))
	if err != nil {
		return err
	}
	p.lock.Close()
	p.lock = lock
	if err := p.rewriteLocked(); err != nil {
		return err
	}
	return p.reopen()
}
