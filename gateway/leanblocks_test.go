package gateway

import (
	"encoding/base64"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestStatusBlockDetails checks a status's header block as grpc-go
// writes it: grpc-status, grpc-message percent-encoded and, only for a
// status with details, grpc-status-details-bin (the google.rpc.Status,
// base64 without padding), which grpc-go's client reads back into the
// same status.
func TestStatusBlockDetails(t *testing.T) {
	s, err := status.New(codes.ResourceExhausted, "slow down: 100% used").WithDetails(durationpb.New(3e9))
	require.NoError(t, err)
	got := decodeBlock(t, newLeanBlocks().status(s, true))
	assert.Equal(t, "200", got[":status"])
	assert.Equal(t, "8", got["grpc-status"])
	assert.Equal(t, "slow down: 100%25 used", got["grpc-message"])
	bin, err := base64.RawStdEncoding.DecodeString(got["grpc-status-details-bin"])
	require.NoError(t, err)
	p := s.Proto() // a google.rpc.Status, read back into a fresh one
	proto.Reset(p)
	require.NoError(t, proto.Unmarshal(bin, p))
	assert.True(t, proto.Equal(s.Proto(), p), "details: %v, want %v", p, s.Proto())

	got = decodeBlock(t, newLeanBlocks().status(status.New(codes.Unknown, "plain"), false))
	assert.Equal(t, map[string]string{"grpc-status": "2", "grpc-message": "plain"}, got)
}

func decodeBlock(t *testing.T, block []byte) map[string]string {
	got := map[string]string{}
	_, err := hpack.NewDecoder(4096, func(f hpack.HeaderField) { got[f.Name] = f.Value }).Write(block)
	require.NoError(t, err)
	return got
}
