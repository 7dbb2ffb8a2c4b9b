package server

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/policy"
	"github.com/rlstore/rlstore/server/internal/decide"
	"github.com/rlstore/rlstore/window"
)

// FuzzArgs feeds the argument parsers arbitrary bytes. They must never panic,
// must accept only canonical forms (so parse then format gives back the
// input), and must read back whatever they would format: parse(format(x)) == x.
// cmd is split on spaces into a command's arguments after its name.
func FuzzArgs(f *testing.F) {
	f.Add([]byte("60"), []byte("k 100 60 COST 2 PEEK"), int64(42))
	f.Add([]byte("500ms"), []byte("k 10 1 500ms"), int64(-1))
	f.Fuzz(func(t *testing.T, word, cmd []byte, n int64) {
		fuzzInt(t, word, n)
		fuzzDuration(t, word, time.Duration(n))
		fields := bytes.Split(cmd, []byte(" "))
		for k := window.KindSlide; k <= window.KindLeaky; k++ {
			fuzzDecision(t, k, fields)
		}
	})
}

func fuzzInt(t *testing.T, word []byte, n int64) {
	if v, ok := parseInt(word); ok && strconv.FormatInt(v, 10) != string(word) {
		t.Fatalf("parseInt(%q) = %d, a non-canonical form", word, v)
	}
	if v, ok := parseInt(strconv.AppendInt(nil, n, 10)); !ok || v != n {
		t.Fatalf("parseInt(format(%d)) = %d, %v", n, v, ok)
	}
}

func fuzzDuration(t *testing.T, word []byte, d time.Duration) {
	if v, ok := policy.ParseDuration(word); ok {
		if v < 0 || v%time.Millisecond != 0 {
			t.Fatalf("policy.ParseDuration(%q) = %v", word, v)
		}
		if back, ok := policy.ParseDuration(formatDuration(v)); !ok || back != v {
			t.Fatalf("policy.ParseDuration(%q) = %v, but %q reads back as %v, %v", word, v, formatDuration(v), back, ok)
		}
	}
	d = d.Abs().Truncate(time.Millisecond)
	if v, ok := policy.ParseDuration(formatDuration(d)); !ok || v != d {
		t.Fatalf("policy.ParseDuration(format(%v)) = %v, %v", d, v, ok)
	}
}

// fuzzDecision parses name args..., and, if that succeeds, formats the result
// back into a command and checks that it parses to the same thing.
// The request it makes must write back (appendCommand, what a cluster
// forwards) as a command that parses to the same request.
func fuzzDecision(t *testing.T, kind window.Kind, args [][]byte) {
	name := strings.ToLower(decide.NativeName(kind))
	cmd := append(byteArgs(name), args...)
	a, err := decide.ParseNative(kind, cmd, nil)
	fuzzParamCache(t, kind, cmd, a, err)
	if err != nil {
		if _, ok := err.(policy.Error); !ok {
			t.Fatalf("%q: error %v is not an policy.Error", cmd, err)
		}
		return
	}
	if err := a.Params.Validate(); err != nil {
		t.Fatalf("%q parsed, but the store would refuse it: %v", cmd, err)
	}
	again := formatDecision(name, a)
	if b, err := decide.ParseNative(kind, again, nil); err != nil || !equalDecisionArgs(a, b) {
		t.Fatalf("%q parsed as %+v, formatted as %q, parsed again as %+v, %v", cmd, a, again, b, err)
	}
	key, r, _ := decide.NativeParser(kind)(nil, &decide.Conn{}, cmd)
	fwd := r.AppendCommand(nil, key)
	if key2, r2, err := decide.NativeParser(kind)(nil, &decide.Conn{}, fwd); err != nil || !bytes.Equal(key, key2) || r != r2 {
		t.Fatalf("%q made a request that writes back as %q, which parses as %+v, %v", cmd, fwd, r2, err)
	}
}

// fuzzParamCache checks that parsing cmd through a decide.ParamCache gives what
// parsing it without one gave (a, err): with an empty cache, with one that
// holds cmd's own parameters, and with one that holds another kind's
// parameters parsed from the same bytes.
func fuzzParamCache(t *testing.T, kind window.Kind, cmd [][]byte, a decide.NativeArgs, err error) {
	var pc decide.ParamCache
	for range 2 { // a miss, then a hit if cmd's parameters were kept
		b, err2 := decide.ParseNative(kind, cmd, &pc)
		if (err == nil) != (err2 == nil) || err == nil && !equalDecisionArgs(a, b) {
			t.Fatalf("%q parsed as %+v, %v, but through a cache as %+v, %v", cmd, a, err, b, err2)
		}
	}
	other := window.KindFixed
	if kind == window.KindFixed {
		other = window.KindSlide
	}
	if _, errOther := decide.ParseNative(other, cmd, &pc); errOther == nil {
		if b, err2 := decide.ParseNative(kind, cmd, &pc); (err == nil) != (err2 == nil) || !equalDecisionArgs(a, b) {
			t.Fatalf("%q parsed as %+v, %v, but after %v's parameters as %+v, %v", cmd, a, err, other, b, err2)
		}
	}
}

// formatDecision writes a as a command: the inverse of parseNative.
func formatDecision(name string, a decide.NativeArgs) [][]byte {
	out := [][]byte{[]byte(name), a.Key, strconv.AppendInt(nil, a.Params.Limit, 10)}
	if a.Params.Kind.Rated() {
		out = append(out, strconv.AppendInt(nil, a.Params.Rate, 10))
	}
	out = append(out, formatDuration(a.Params.Period), []byte("COST"), strconv.AppendInt(nil, a.Cost, 10))
	if a.Peek {
		out = append(out, []byte("PEEK"))
	}
	return out
}

func equalDecisionArgs(a, b decide.NativeArgs) bool {
	return bytes.Equal(a.Key, b.Key) && a.Params == b.Params && a.Cost == b.Cost && a.Peek == b.Peek
}

// formatDuration writes a whole number of milliseconds d in its largest exact unit.
func formatDuration(d time.Duration) []byte {
	units := []struct {
		size time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, ""}, {time.Millisecond, "ms"}}
	for _, u := range units {
		if d%u.size == 0 {
			return append(strconv.AppendInt(nil, int64(d/u.size), 10), u.name...)
		}
	}
	panic("formatDuration: not a whole number of milliseconds")
}
