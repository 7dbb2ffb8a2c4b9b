package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// MemberFileName is the file in a data dir that keeps the known member set.
const MemberFileName = "cluster-members"

// MemberFile keeps a node's known member set (see Known) in its data
// dir, so that a restarted node rejoins the members it had
// (Config.Remembered) instead of forming a cluster of its own, and counts
// its quorum over the same set. Make it with OpenMemberFile and give its
// Known to the membership, which keeps it; the file is rewritten in the
// background after each change, crash-safe (a temp file, fsync, rename,
// fsync of the folder). Its methods are safe for concurrent use.
type MemberFile struct {
	path  string
	self  string
	known *Known
	log   *slog.Logger
	kick  chan struct{} // a buffer of 1: a write is due
	stop  chan struct{}
	done  chan struct{}
	once  sync.Once // closes stop

	mu      sync.Mutex    // guards the fields below
	latest  []KnownMember // the set's entries as last changed
	written []KnownMember // what the file holds
}

// OpenMemberFile reads dir's member file, if any, into a known set for
// the node called self, and starts the file's writer. With fresh, it
// reads nothing: the node starts a new cluster (--cluster-bootstrap).
func OpenMemberFile(dir, self string, fresh bool, log *slog.Logger) (*MemberFile, error) {
	f := &MemberFile{path: filepath.Join(dir, MemberFileName), self: self, log: log, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	var saved []KnownMember
	if !fresh {
		var err error
		if saved, err = readMembers(f.path); err != nil {
			return nil, err
		}
	}
	f.known, f.latest, f.written = NewKnown(saved), saved, saved
	f.known.OnChange(f.changed)
	if fresh {
		f.due() // forget the file's members now, not at the first change
	}
	go f.writeLoop()
	return f, nil
}

// Known is the set the file keeps, for Config.Known; nil for a nil file.
func (f *MemberFile) Known() *Known {
	if f == nil {
		return nil
	}
	return f.known
}

// Remembered returns the gossip addresses of the members remembered,
// this node left out, sorted.
func (f *MemberFile) Remembered() []string {
	var out []string
	for _, m := range f.known.Members() {
		if m.Name != f.self && m.Gossip != "" {
			out = append(out, m.Gossip)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// changed is the set's OnChange.
func (f *MemberFile) changed(all []KnownMember) {
	f.mu.Lock()
	f.latest = all
	f.mu.Unlock()
	f.due()
}

func (f *MemberFile) due() {
	select {
	case f.kick <- struct{}{}:
	default: // one is due: it writes the newest set
	}
}

// Close writes what is still due and stops the writer. Calls after the
// first do nothing.
func (f *MemberFile) Close() {
	f.once.Do(func() { close(f.stop) })
	<-f.done
}

func (f *MemberFile) writeLoop() {
	defer close(f.done)
	for {
		select {
		case <-f.kick:
			f.flush()
		case <-f.stop:
			select {
			case <-f.kick:
				f.flush()
			default:
			}
			return
		}
	}
}

// flush writes the newest set if the file does not hold it yet.
func (f *MemberFile) flush() {
	f.mu.Lock()
	m := f.latest
	same := f.written != nil && slices.Equal(m, f.written)
	f.mu.Unlock()
	if same {
		return
	}
	if err := writeMembers(f.path, m); err != nil {
		f.log.Warn("cluster: could not save the known members; a restart rejoins those saved before", "file", f.path, "err", err)
		return
	}
	f.mu.Lock()
	f.written = m
	f.mu.Unlock()
}

// readMembers reads a member file; a missing one remembers nothing.
func readMembers(path string) ([]KnownMember, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	ms, err := ParseKnown(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ms, nil
}

// writeMembers replaces path with m, crash-safe: after a crash the file
// holds either the old members or the new ones, whole.
func writeMembers(path string, ms []KnownMember) error {
	return writeFileSync(path, AppendKnown(nil, ms))
}

// writeFileSync replaces path with b, crash-safe: a temp file, fsync,
// rename, fsync of the folder.
func writeFileSync(path string, b []byte) error {
	tmp := path + ".tmp"
	file, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = file.Write(b)
	if err == nil {
		err = file.Sync()
	}
	err = errors.Join(err, file.Close())
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// syncDir makes the names renamed in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}
