package window

import (
	"os"
	"testing"
)

// longTracesEnv opts into the long random traces of the model tests, which
// take minutes on a busy machine: RLSTORE_LONG_TRACES=1 go test ./window/.
const longTracesEnv = "RLSTORE_LONG_TRACES"

// traceLen is the length of a random model trace: def by default, short
// under -short, and long when longTracesEnv is set (even under -race,
// because whoever sets it wants the long run).
func traceLen(t testing.TB, short, def, long int) int {
	switch {
	case os.Getenv(longTracesEnv) != "":
		t.Logf("%s set: %d operations a trace", longTracesEnv, long)
		return long
	case testing.Short() || underRace:
		return short
	}
	return def
}
