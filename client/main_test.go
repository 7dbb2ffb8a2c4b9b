package client_test

import (
	"os"
	"testing"

	"github.com/rlstore/rlstore/internal/rlstoretest"
)

// rlstoreBin is the rlstore binary TestMain built from this checkout.
var rlstoreBin string

func TestMain(m *testing.M) {
	os.Exit(rlstoretest.MainBuild(false, func(bin string) int {
		rlstoreBin = bin
		return m.Run()
	}))
}

// startRlstore runs rlstore on a free loopback port until the test ends and
// returns its address.
func startRlstore(tb testing.TB) string {
	tb.Helper()
	return rlstoretest.Start(tb, rlstoreBin, nil, "--port", "0").Addr(tb)
}
