package httplimit_test

import (
	"os"
	"testing"

	"github.com/rlstore/rlstore/internal/rlstoretest"
)

// rlstoreBin is the rlstore binary TestMain built from this checkout.
var rlstoreBin string

func TestMain(m *testing.M) { os.Exit(rlstoretest.Main(m, &rlstoreBin)) }

// startRlstore runs rlstore on a free loopback port until the test ends and
// returns its address.
func startRlstore(tb testing.TB) string { return rlstoretest.StartPlain(tb, rlstoreBin) }
