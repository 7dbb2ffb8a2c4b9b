package proc

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProcCPUOfThisProcess(t *testing.T) {
	cpu, err := CPU(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, cpu, time.Duration(0))
	_, err = CPU(-1)
	assert.Error(t, err)
}

func TestHottestParsesPerfReport(t *testing.T) {
	report := `# Samples: 1K of event 'cpu-clock'
#
    14.13%  [.] github.com/rlstore/rlstore/shard.(*shard).findLocked           -      -
     6.52%  [k] finish_task_switch.isra.0                                      -      -
     1.00%  [.] runtime.memmove                                                -      -
`
	got := hottest(report, 2)
	require.Len(t, got, 2)
	assert.Contains(t, got[0], "14.13%")
	assert.Contains(t, got[0], "user")
	assert.Contains(t, got[0], "shard.(*shard).findLocked")
	assert.Contains(t, got[1], "kernel")
}
