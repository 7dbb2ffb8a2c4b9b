package proc

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReadCPUCountsThisProcess(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("only Unix systems say")
	}
	c := ReadCPU() // starting the test binary took more than getrusage's microsecond

	assert.Greater(t, c.Sys+c.User, 0.0, "ReadCPU() = %+v", c)
	limit, ok := OpenFilesLimit()
	assert.True(t, ok)
	assert.Positive(t, limit)
}
