package server

import "github.com/rlstore/rlstore/internal/rlstoretest"

// The processes these tests start (redis-server, redis-cli in tmux, node,
// python) hold none of the files this test binary inherited, such as the
// lock of `flock heavy.lock go test`: see rlstoretest.NoInheritedFiles.
func init() { rlstoretest.NoInheritedFiles() }
