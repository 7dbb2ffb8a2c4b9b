package decide

import (
	"testing"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/window"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParamCache parses a sequence of native commands' parameters through
// one cache, each time as parsing without it would: repeats hit, and a
// change of kind, of any byte or of where the bytes split is a miss.
func TestParamCache(t *testing.T) {
	var pc ParamCache
	steps := []struct {
		kind window.Kind
		args []string
		hit  bool
	}{
		{window.KindSlide, []string{"100", "60"}, false},
		{window.KindSlide, []string{"100", "60"}, true},
		{window.KindFixed, []string{"100", "60"}, false}, // same bytes, another kind
		{window.KindSlide, []string{"10", "060"}, false}, // same bytes, split elsewhere
		{window.KindSlide, []string{"100", "61"}, false},
		{window.KindSlide, []string{"100", "0"}, false}, // an error: not kept
		{window.KindSlide, []string{"100", "0"}, false},
		{window.KindToken, []string{"10", "5", "1s"}, false},
		{window.KindToken, []string{"10", "5", "1s"}, true},
		{window.KindSlide, []string{"1", "123456789012345678901234567890123"}, false}, // too long to keep
		{window.KindSlide, []string{"1", "123456789012345678901234567890123"}, false},
	}
	for _, st := range steps {
		args := byteArgs(st.args...)
		assert.Equal(t, st.hit, pc.hit(st.kind, args), "%v %q", st.kind, st.args)
		want, wantErr := policy.ParseParams(st.kind, args)
		got, err := pc.Parse(st.kind, args)
		if wantErr != nil {
			require.Equal(t, wantErr, err, "%v %q", st.kind, st.args)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, want, got, "%v %q", st.kind, st.args)
	}
}

func byteArgs(s ...string) [][]byte {
	out := make([][]byte, len(s))
	for i := range s {
		out[i] = []byte(s[i])
	}
	return out
}
