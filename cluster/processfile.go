package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// ProcessFileName is the file in a data dir that names, by their lease
// incarnations, the processes that ran on it, newest last: a process that
// restores the dir's store holds what they left in it (see Lease.Restored).
const ProcessFileName = "cluster-processes"

// processHeader starts a process file; its number is the format's version.
const processHeader = "rlstore-processes 1\n"

// processKeep is how many processes a process file names. A slot handed
// to a process that many restarts ago is not released to the newest one
// on its data dir's word: it waits, as without a data dir.
const processKeep = 8

// ErrProcessFormat is returned for a process file this build cannot read.
var ErrProcessFormat = errors.New("cluster: not a process file this build reads")

// ProcessFile is the list of processes that ran on a node's data dir.
// Make it with OpenProcessFile and give it as Config.Processes: the
// membership adds its lease's incarnation before it starts, and tells the
// lease the earlier ones (Lease.Restored).
type ProcessFile struct {
	path   string
	before []uint64 // what the file named when opened, newest last
}

// OpenProcessFile reads dir's process file, if any.
func OpenProcessFile(dir string) (*ProcessFile, error) {
	f := &ProcessFile{path: filepath.Join(dir, ProcessFileName)}
	b, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	if f.before, err = parseProcesses(b); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	return f, nil
}

// Before returns the processes the file named when opened, newest last.
func (f *ProcessFile) Before() []uint64 { return f.before }

// Add appends inc to the file, crash-safe, keeping the newest processKeep,
// and returns once it is durable.
func (f *ProcessFile) Add(inc uint64) error {
	all := append(f.before[:len(f.before):len(f.before)], inc)
	all = all[max(0, len(all)-processKeep):]
	b := []byte(processHeader)
	for _, p := range all {
		b = strconv.AppendUint(b, p, 10)
		b = append(b, '\n')
	}
	return writeFileSync(f.path, b)
}

// parseProcesses reads Add's text.
func parseProcesses(b []byte) ([]uint64, error) {
	if !bytes.HasPrefix(b, []byte(processHeader)) {
		return nil, ErrProcessFormat
	}
	var incs []uint64
	sc := bufio.NewScanner(bytes.NewReader(b[len(processHeader):]))
	for sc.Scan() {
		inc, err := strconv.ParseUint(sc.Text(), 10, 64)
		if err != nil || inc == 0 {
			return nil, fmt.Errorf("%w: line %q", ErrProcessFormat, sc.Text())
		}
		incs = append(incs, inc)
	}
	return incs, sc.Err()
}
