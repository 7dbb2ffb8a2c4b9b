package main

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoDataDirWarnsOfForgottenFences: a clustered node without --data-dir
// says at its start that a restart forgets its fences; one with it keeps
// them in its death file and says nothing.
func TestNoDataDirWarnsOfForgottenFences(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	f, err := rememberDeaths(config{}, log)
	require.NoError(t, err)
	assert.Nil(t, f)
	assert.Contains(t, buf.String(), "cluster: no --data-dir, so a restart forgets which members this node declared dead")

	buf.Reset()
	f, err = rememberDeaths(config{DataDir: t.TempDir()}, log)
	require.NoError(t, err)
	require.NotNil(t, f)
	assert.Empty(t, buf.String())
}
