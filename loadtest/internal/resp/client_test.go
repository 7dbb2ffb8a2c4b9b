package resp

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rlstore/rlstore/loadtest/internal/fakeserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func dialTest(t *testing.T, addr string) *Client {
	t.Helper()
	cl, err := Dial(context.Background(), addr)
	require.NoError(t, err)
	t.Cleanup(func() { cl.Close() })
	// A client that does not pipeline deadlocks against a barrier server;
	// the deadline turns that into a failure instead of a hang.
	require.NoError(t, cl.SetDeadline(time.Now().Add(10*time.Second)))
	return cl
}

func TestClientPipelinesBeforeReading(t *testing.T) {
	const depth = 16
	srv := fakeserver.Start(t, depth)
	cl := dialTest(t, srv.Addr())
	tmpl := NewTemplate([]string{"INCR", "{key}"})
	var buf []byte
	for i := range depth {
		buf = tmpl.Append(buf, []byte{'k', byte('a' + i%2)})
	}
	require.NoError(t, cl.Write(buf), "all %d commands go out in one write", depth)
	var rep Reply
	for i := range depth {
		require.NoError(t, cl.Read(&rep), "reply %d", i)
		assert.Equal(t, byte(KindInteger), rep.Kind)
		assert.Equal(t, int64(i/2+1), rep.Int, "reply %d answers command %d, in order", i, i)
	}
}

func TestClientRepeatedPipelines(t *testing.T) {
	srv := fakeserver.Start(t, 4)
	cl := dialTest(t, srv.Addr())
	tmpl := NewTemplate([]string{"FAKE.SLIDE", "{key}", "6", "60"})
	var rep Reply
	var allowed, denied int
	for range 3 {
		buf := tmpl.Append(nil, []byte("same"))
		buf = tmpl.Append(buf, []byte("same"))
		buf = tmpl.Append(buf, []byte("same"))
		buf = tmpl.Append(buf, []byte("same"))
		require.NoError(t, cl.Write(buf))
		for range 4 {
			require.NoError(t, cl.Read(&rep))
			require.True(t, rep.IntArray, "a decision")
			if rep.Ints[0] == 1 {
				allowed++
			} else {
				denied++
			}
		}
	}
	assert.Equal(t, 6, allowed)
	assert.Equal(t, 6, denied)
}

func TestClientDo(t *testing.T) {
	srv := fakeserver.Start(t, 0)
	cl := dialTest(t, srv.Addr())
	rep, err := cl.Do(context.Background(), "PING")
	require.NoError(t, err)
	assert.Equal(t, "PONG", string(rep.Str))

	_, err = cl.DoOK(context.Background(), "NOPE")
	assert.ErrorContains(t, err, "unknown command")

	rep, err = cl.Do(context.Background(), "INFO", "memory")
	require.NoError(t, err)
	assert.Contains(t, string(rep.Str), "used_memory_rss:1048576\r\n")
}

func TestTemplateEncodesLikeAppendCommand(t *testing.T) {
	tmpl := NewTemplate([]string{"RL.SLIDE", "user:{key}:x", "100", "60"})
	got := tmpl.Append(nil, []byte("42"))
	assert.Equal(t, string(AppendCommand(nil, "RL.SLIDE", "user:42:x", "100", "60")), string(got))
	assert.True(t, tmpl.HasKey())

	ping := NewTemplate([]string{"PING"})
	assert.Equal(t, "*1\r\n$4\r\nPING\r\n", string(ping.Append(nil, []byte("ignored"))))
	assert.False(t, ping.HasKey())
}

func TestReaderParsesEveryKind(t *testing.T) {
	in := "+OK\r\n-ERR bad\r\n:-42\r\n$5\r\nhello\r\n$-1\r\n*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:0\r\n" +
		"*3\r\n$3\r\nfoo\r\n:7\r\n*2\r\n:1\r\n+x\r\n*-1\r\n$0\r\n\r\n+\r\n"
	rd := NewReader(strings.NewReader(in))
	var r Reply
	next := func() *Reply {
		require.NoError(t, rd.Read(&r))
		return &r
	}
	assert.Equal(t, "OK", string(next().Str))
	assert.True(t, next().IsError())
	assert.Equal(t, int64(-42), next().Int)
	assert.Equal(t, "hello", string(next().Str))
	assert.Equal(t, int64(-1), next().Int, "nil bulk")
	rep := next()
	assert.True(t, rep.IntArray)
	assert.Equal(t, []int64{1, 10, 9, 0, 0}, rep.Ints)
	rep = next()
	assert.False(t, rep.IntArray, "a mixed array is not a decision")
	assert.Equal(t, []int64{7}, rep.Ints)
	assert.Equal(t, int64(3), rep.Int)
	assert.Equal(t, int64(-1), next().Int, "nil array")
	assert.Equal(t, "", string(next().Str), "empty bulk")
	assert.Equal(t, byte(KindSimple), next().Kind, "empty simple string")
}

func TestReaderRejectsMalformed(t *testing.T) {
	for _, in := range []string{
		"?x\r\n", ":abc\r\n", ":\r\n", "+no-crlf\n", "$99999999999\r\n", "$5\r\nhi\r\n",
		"$2\r\nhiXX", "*2\r\n:1\r\n", ":99999999999999999999\r\n", "*-2\r\n",
		strings.Repeat("*1\r\n", 20) + ":1\r\n",
	} {
		var r Reply
		assert.Error(t, NewReader(strings.NewReader(in)).Read(&r), "%q", in)
	}
}

func TestReaderInt64Bounds(t *testing.T) {
	var r Reply
	require.NoError(t, NewReader(strings.NewReader(":-9223372036854775808\r\n")).Read(&r))
	assert.Equal(t, int64(-9223372036854775808), r.Int)
	require.NoError(t, NewReader(strings.NewReader(":9223372036854775807\r\n")).Read(&r))
	assert.Equal(t, int64(9223372036854775807), r.Int)
	assert.Error(t, NewReader(strings.NewReader(":9223372036854775808\r\n")).Read(&r))
}

func TestReaderSteadyStateDoesNotAllocate(t *testing.T) {
	one := "*5\r\n:1\r\n:10\r\n:9\r\n:0\r\n:0\r\n"
	src := bytes.NewReader(nil)
	rd := NewReader(src)
	var r Reply
	data := []byte(strings.Repeat(one, 1000))
	src.Reset(data)
	require.NoError(t, rd.Read(&r))
	allocs := testing.AllocsPerRun(500, func() {
		if err := rd.Read(&r); err != nil {
			src.Reset(data)
		}
	})
	assert.Zero(t, allocs)
}
