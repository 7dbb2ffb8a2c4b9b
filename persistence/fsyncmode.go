package persistence

import "fmt"

// FsyncMode says when the log is fsynced, as redis-server's appendfsync does.
type FsyncMode uint8

// Fsync modes. The zero value is the default, FsyncEverysec.
const (
	FsyncEverysec FsyncMode = iota // write and fsync once per flush interval: a crash loses about a second
	FsyncAlways                    // Commit writes and fsyncs before the server replies
	FsyncNo                        // write once per flush interval; the OS decides when it reaches the disk
)

func (f FsyncMode) String() string {
	switch f {
	case FsyncAlways:
		return "always"
	case FsyncNo:
		return "no"
	}
	return "everysec"
}

// ParseFsync parses an --appendfsync value.
func ParseFsync(s string) (FsyncMode, error) {
	for _, f := range []FsyncMode{FsyncEverysec, FsyncAlways, FsyncNo} {
		if s == f.String() {
			return f, nil
		}
	}
	return 0, fmt.Errorf("persistence: appendfsync must be always, everysec or no, got %q", s)
}
