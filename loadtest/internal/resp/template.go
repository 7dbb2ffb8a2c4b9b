package resp

import (
	"strconv"
	"strings"
)

// KeyPlaceholder marks where a Template puts the key.
const KeyPlaceholder = "{key}"

// Template is a command pre-encoded as RESP with one slot for a key, so that
// encoding a request is a few appends and no allocation. The zero value
// encodes nothing.
type Template struct {
	head []byte // "*N\r\n" and the arguments before the key's argument
	kpre string // the key argument's text before {key}
	kpos string // the key argument's text after {key}
	tail []byte // the arguments after the key's argument
	keyd bool   // whether any argument holds {key}
}

// NewTemplate encodes args, the first argument containing {key} taking the
// key at run time, as in "RL.SLIDE", "{key}", "100", "60".
func NewTemplate(args []string) Template {
	t := Template{head: appendArrayHeader(nil, len(args))}
	for _, a := range args {
		if !t.keyd {
			if i := strings.Index(a, KeyPlaceholder); i >= 0 {
				t.keyd = true
				t.kpre, t.kpos = a[:i], a[i+len(KeyPlaceholder):]
				continue
			}
			t.head = appendBulk(t.head, a)
			continue
		}
		t.tail = appendBulk(t.tail, a)
	}
	return t
}

// Append appends the command for key to dst.
func (t Template) Append(dst, key []byte) []byte {
	dst = append(dst, t.head...)
	if !t.keyd {
		return dst
	}
	n := len(t.kpre) + len(key) + len(t.kpos)
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, t.kpre...)
	dst = append(dst, key...)
	dst = append(dst, t.kpos...)
	dst = append(dst, '\r', '\n')
	return append(dst, t.tail...)
}

// HasKey reports whether the template takes a key.
func (t Template) HasKey() bool { return t.keyd }

// AppendCommand appends args encoded as a RESP array of bulk strings.
func AppendCommand(dst []byte, args ...string) []byte {
	dst = appendArrayHeader(dst, len(args))
	for _, a := range args {
		dst = appendBulk(dst, a)
	}
	return dst
}

func appendArrayHeader(dst []byte, n int) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(n), 10)
	return append(dst, '\r', '\n')
}

func appendBulk(dst []byte, s string) []byte {
	dst = append(dst, '$')
	dst = strconv.AppendInt(dst, int64(len(s)), 10)
	dst = append(dst, '\r', '\n')
	dst = append(dst, s...)
	return append(dst, '\r', '\n')
}
