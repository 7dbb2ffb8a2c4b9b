package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDispatchRejectsUnknownCommands(t *testing.T) {
	var out, errs bytes.Buffer
	assert.Error(t, dispatch(context.Background(), nil, &out, &errs))
	assert.Error(t, dispatch(context.Background(), []string{"nope"}, &out, &errs))
	require.NoError(t, dispatch(context.Background(), []string{"help"}, &out, &errs))
	assert.Contains(t, out.String(), "compare")
}

func TestRunRefusesNonLoopbackTargets(t *testing.T) {
	var out, errs bytes.Buffer
	err := dispatch(context.Background(), []string{"run", "--addr", "192.0.2.1:6379", "-n", "1", "-q"}, &out, &errs)
	assert.ErrorContains(t, err, "not a loopback")
}

func TestChoosePairs(t *testing.T) {
	pairs, err := choosePairs("rl.token, rl.slide")
	require.NoError(t, err)
	require.Len(t, pairs, 2)
	assert.Equal(t, "lua.gcra", pairs[0].Redis)
	assert.Equal(t, "lua.slide", pairs[1].Redis)
	_, err = choosePairs("rl.nope")
	assert.Error(t, err)
	all, err := choosePairs("")
	require.NoError(t, err)
	assert.Len(t, all, 7)
}

func TestDepths(t *testing.T) {
	f := loadFlags{pipeline: "1, 4,16"}
	d, err := f.depths()
	require.NoError(t, err)
	assert.Equal(t, []int{1, 4, 16}, d)
	f.pipeline = "x"
	_, err = f.depths()
	assert.Error(t, err)
}
