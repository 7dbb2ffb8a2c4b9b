package observe

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rlstore/rlstore/server/internal/core"
)

// replies is a session's replies, each as one string.
type replies []string

func (r *replies) WriteError(s string)      { *r = append(*r, "-"+s) }
func (r *replies) WriteString(s string)     { *r = append(*r, "+"+s) }
func (r *replies) WriteBulk(b []byte)       { *r = append(*r, "$"+string(b)) }
func (r *replies) WriteBulkString(s string) { *r = append(*r, "$"+s) }
func (r *replies) WriteInt(n int)           { *r = append(*r, ":"+strconv.Itoa(n)) }
func (r *replies) WriteInt64(n int64)       { *r = append(*r, ":"+strconv.FormatInt(n, 10)) }
func (r *replies) WriteUint64(n uint64)     { *r = append(*r, ":"+strconv.FormatUint(n, 10)) }
func (r *replies) WriteArray(n int)         { *r = append(*r, "*"+strconv.Itoa(n)) }
func (r *replies) WriteNull()               { *r = append(*r, "$-1") }
func (r *replies) WriteRaw(b []byte)        { *r = append(*r, string(b)) }
func (r *replies) WriteAny(any)             { *r = append(*r, "?") }

// SLOWLOG and LATENCY answer from the log, through the table.
func TestSlowlogCommands(t *testing.T) {
	var sl Slowlog
	sl.MaxLen.Store(10)
	tb := core.NewTable()
	for _, cm := range sl.Commands() {
		tb.Register(cm, nil)
	}
	call := func(words ...string) []string {
		var args [][]byte
		for _, w := range words {
			args = append(args, []byte(w))
		}
		var r replies
		cm, reply := tb.Resolve(args)
		if cm == nil {
			return []string{"-" + reply}
		}
		cm.Run(&core.Session{Out: &r}, args)
		return r
	}
	sl.Add([][]byte{[]byte("AUTH"), []byte("pw")}, true, 20*time.Millisecond, "1.2.3.4:5", "n")
	assert.Equal(t, []string{":1"}, call("SLOWLOG", "LEN"))
	got := call("slowlog", "get", "1")
	assert.Equal(t, []string{"*1", "*6", ":0"}, got[:3])
	assert.Equal(t, []string{"*2", "$AUTH", "$(redacted)", "$1.2.3.4:5", "$n"}, got[5:], "a secret command's arguments are hidden")
	assert.Equal(t, []string{"-ERR count should be greater than or equal to -1"}, call("SLOWLOG", "GET", "-2"))
	assert.Equal(t, []string{"+OK"}, call("SLOWLOG", "RESET"))
	assert.Equal(t, []string{":0"}, call("SLOWLOG", "LEN"))
	assert.Equal(t, []string{"*0"}, call("LATENCY", "LATEST"))
	assert.Equal(t, "*3", call("LATENCY", "HELP")[0], "LATEST, RESET and HELP")
	assert.Equal(t, "slowlog|get", tb.Lookup("slowlog").Sub([]byte("GET")).Name)
}
