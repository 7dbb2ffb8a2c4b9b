package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// MemberFileName is the file in a data dir that remembers the members.
const MemberFileName = "cluster-members"

// memberFileHeader starts the file; its number is the format's version.
const memberFileHeader = "rlstore-cluster-members 1"

// MemberFile remembers, in a node's data dir, the other members of its
// cluster and their gossip addresses, so that a restarted node rejoins
// them (Config.Remembered) instead of forming a cluster of its own. A
// member that left gracefully is forgotten; one that died is kept, since
// it may come back. Make it with OpenMemberFile and feed it every view
// with Update; it writes in the background, crash-safe (a temp file,
// fsync, rename, fsync of the folder). Its methods are safe for
// concurrent use.
type MemberFile struct {
	path string
	log  *slog.Logger
	kick chan struct{} // a buffer of 1: a write is due
	stop chan struct{}
	done chan struct{}
	once sync.Once // closes stop

	mu      sync.Mutex        // guards the fields below
	members map[string]string // name → gossip address
	written map[string]string // what the file holds
}

// OpenMemberFile reads dir's member file, if any, and starts its writer.
// Remembered returns what it read.
func OpenMemberFile(dir string, log *slog.Logger) (*MemberFile, error) {
	f := &MemberFile{path: filepath.Join(dir, MemberFileName), log: log, kick: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	m, err := readMembers(f.path)
	if err != nil {
		return nil, err
	}
	f.members, f.written = m, maps.Clone(m)
	go f.writeLoop()
	return f, nil
}

// Remembered returns the gossip addresses of the members remembered, sorted.
func (f *MemberFile) Remembered() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := slices.Collect(maps.Values(f.members))
	slices.Sort(out)
	return slices.Compact(out)
}

// Forget forgets every member: a node told to start a new cluster
// (Config.Bootstrap) remembers only the members it meets from then on.
func (f *MemberFile) Forget() {
	f.mu.Lock()
	clear(f.members)
	f.mu.Unlock()
	f.due()
}

// Update records v's members: each other member at its current address,
// less those that left gracefully.
func (f *MemberFile) Update(v View) {
	f.mu.Lock()
	for _, m := range v.Members {
		if m.Name != v.Self && m.Gossip != "" {
			f.members[m.Name] = m.Gossip
		}
	}
	for _, m := range v.Gone {
		if m.State == StateLeft {
			delete(f.members, m.Name)
		}
	}
	changed := !maps.Equal(f.members, f.written)
	f.mu.Unlock()
	if changed {
		f.due()
	}
}

func (f *MemberFile) due() {
	select {
	case f.kick <- struct{}{}:
	default: // one is due: it writes the newest members
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

// flush writes the members if they differ from the file's.
func (f *MemberFile) flush() {
	f.mu.Lock()
	m := maps.Clone(f.members)
	same := maps.Equal(m, f.written)
	f.mu.Unlock()
	if same {
		return
	}
	if err := writeMembers(f.path, m); err != nil {
		f.log.Warn("cluster: could not remember the members; a restart rejoins the previous ones", "file", f.path, "err", err)
		return
	}
	f.mu.Lock()
	f.written = m
	f.mu.Unlock()
}

// readMembers reads a member file; a missing one remembers nothing.
func readMembers(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	if !sc.Scan() || sc.Text() != memberFileHeader {
		return nil, fmt.Errorf("cluster: %s: not a member file of a version this node reads (want %q first)", path, memberFileHeader)
	}
	m := map[string]string{}
	for n := 2; sc.Scan(); n++ {
		name, addr, ok := strings.Cut(sc.Text(), " ")
		if !ok || name == "" || addr == "" || strings.Contains(addr, " ") {
			return nil, fmt.Errorf("cluster: %s: line %d: want a name and a gossip address", path, n)
		}
		m[name] = addr
	}
	return m, nil
}

// writeMembers replaces path with m, crash-safe: after a crash the file
// holds either the old members or the new ones, whole.
func writeMembers(path string, m map[string]string) error {
	var b bytes.Buffer
	b.WriteString(memberFileHeader + "\n")
	for _, name := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s %s\n", name, m[name])
	}
	tmp := path + ".tmp"
	file, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = file.Write(b.Bytes())
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
