package integrations

import (
	"testing"

	"github.com/rlstore/rlstore/internal/rltest"
)

func TestMain(m *testing.M) { rltest.Main(m) }
