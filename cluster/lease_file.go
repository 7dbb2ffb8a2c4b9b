package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// DeathFileName is the file in a data dir that keeps the lease's death
// counts, and so its fences (see Lease.KeepDeaths).
const DeathFileName = "cluster-deaths"

// deathHeader starts a death file; its number is the format's version.
const deathHeader = "rlstore-deaths 1\n"

// ErrDeathFormat is returned for a death file this build cannot read.
var ErrDeathFormat = errors.New("cluster: not a death file this build reads")

// DeathFile keeps a node's death counts in its data dir, so that a
// restarted process fences the members its earlier one fenced: a member
// that fenced X and forgot it in a restart could help X renew its lease
// while the node that took X's slots serves them (docs/cluster.md, "Fences
// survive a restart"). Unlike the member file it saves synchronously:
// Save returns once the counts are on disk, before the death they record
// fences anyone. Make it with OpenDeathFile and pass its Saved and Save to
// Lease.KeepDeaths (Config.Deaths does). Its methods are safe for
// concurrent use.
type DeathFile struct {
	path string

	mu    sync.Mutex        // guards saved, and orders the writes
	saved map[string]uint32 // what the file holds
}

// OpenDeathFile reads dir's death file, if any. With fresh
// (--cluster-bootstrap, a new cluster) it reads nothing and empties the
// file.
func OpenDeathFile(dir string, fresh bool) (*DeathFile, error) {
	f := &DeathFile{path: filepath.Join(dir, DeathFileName), saved: map[string]uint32{}}
	if fresh {
		if err := f.Save(map[string]uint32{}); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
		return f, nil
	}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if f.saved, err = parseDeaths(b); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return f, nil
}

// Saved returns the counts the file holds; nil for a nil file.
func (f *DeathFile) Saved() map[string]uint32 {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]uint32, len(f.saved))
	for k, v := range f.saved {
		out[k] = v
	}
	return out
}

// Save replaces the file's counts with counts, crash-safe, and returns
// once they are durable.
func (f *DeathFile) Save(counts map[string]uint32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := writeFileSync(f.path, appendDeaths(nil, counts)); err != nil {
		return err
	}
	f.saved = make(map[string]uint32, len(counts))
	for k, v := range counts {
		f.saved[k] = v
	}
	return nil
}

// appendDeaths appends the file's text for counts: the header, then one
// line per member, "name count", sorted by name.
func appendDeaths(dst []byte, counts map[string]uint32) []byte {
	dst = append(dst, deathHeader...)
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		dst = append(dst, name...)
		dst = append(dst, ' ')
		dst = strconv.AppendUint(dst, uint64(counts[name]), 10)
		dst = append(dst, '\n')
	}
	return dst
}

// parseDeaths reads appendDeaths's text.
func parseDeaths(b []byte) (map[string]uint32, error) {
	if !bytes.HasPrefix(b, []byte(deathHeader)) {
		return nil, ErrDeathFormat
	}
	counts := map[string]uint32{}
	sc := bufio.NewScanner(bytes.NewReader(b[len(deathHeader):]))
	for sc.Scan() {
		name, n, ok := strings.Cut(sc.Text(), " ")
		c, err := strconv.ParseUint(n, 10, 32)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("%w: line %q", ErrDeathFormat, sc.Text())
		}
		counts[name] = uint32(c)
	}
	return counts, sc.Err()
}
