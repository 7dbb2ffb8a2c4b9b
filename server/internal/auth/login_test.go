package auth

import (
	"testing"

	"github.com/rlstore/rlstore/server/internal/core"
	"github.com/stretchr/testify/assert"
)

func TestParseHello(t *testing.T) {
	args := func(s ...string) [][]byte {
		var out [][]byte
		for _, a := range s {
			out = append(out, []byte(a))
		}
		return out
	}
	h, reply := parseHello(args("HELLO", "3", "auth", "u", "p", "SETNAME", "n"), 2)
	assert.Empty(t, reply)
	assert.Equal(t, helloArgs{proto: 3, auth: args("u", "p"), setName: []byte("n"), hasName: true}, h)
	h, reply = parseHello(args("HELLO"), 2)
	assert.Equal(t, helloArgs{proto: 2}, h)
	assert.Empty(t, reply)
	_, reply = parseHello(args("HELLO", "4"), 2)
	assert.Equal(t, errNoProto, reply)
	_, reply = parseHello(args("HELLO", "x"), 2)
	assert.Equal(t, errProtoNotInt, reply)
	_, reply = parseHello(args("HELLO", "3", "AUTH", "u"), 2)
	assert.Equal(t, "ERR Syntax error in HELLO option 'AUTH'", reply)
	assert.Equal(t, core.Hidden{From: 3, To: 5}, secretHelloAuth(args("HELLO", "3", "AUTH", "u", "p")))
	assert.Equal(t, core.Hidden{}, secretHelloAuth(args("HELLO", "3")))
}
